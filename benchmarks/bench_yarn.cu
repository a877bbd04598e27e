// bench_yarn_cuda: bench_yarn.cpp compiled by nvcc for the CUDA system (the GPU).
#include "bench_yarn.cpp"
