// bench_triangle_cuda: bench_triangle.cpp compiled by nvcc for the CUDA system (the GPU).
#include "bench_triangle.cpp"
