// scene_runner.cpp compiled by nvcc for weft-run-cuda.
#include "scene_runner.cpp"
