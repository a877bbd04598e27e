// weft-run-cuda: weft-run (main.cpp) compiled by nvcc, stepping on the CUDA
// system (the GPU). Same command line, CSV and frames as weft-run.
#include "main.cpp"
