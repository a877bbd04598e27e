// stepper.cpp compiled by nvcc against weft::cuda.
#include "stepper.cpp"
