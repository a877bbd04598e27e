// Time per call of weft::project_to_psd on 12 × 12 symmetric matrices of the
// kinds the yarn elements project (benchmarks/RESULTS.md, "Full Newton's fixed
// cost"): random indefinite, rank 2 plus a small indefinite rest (a bending
// element's Hessian), rank 1, and a multiple of the identity. Then the same
// kinds made blind to translations (a bending stencil's three nodes of
// [x, s]; the Helmert complement taken on both sides, and the zero matrix of
// an undamped form), each through project_to_psd and through
// project_translation_invariant_to_psd. One thread; prints JSON.
// Usage: bench_psd [--matrices N] [--repeats R]
#include <weft/core/psd.hpp>
#include <weft/element/difference_projection.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr int N = 12;
using Matrix = weft::Mat<double, N, N>;
using Vector = weft::Vec<double, N>;

std::vector<Matrix> matrices(int kind, int count, std::mt19937& rng)
{
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<Matrix> out;
    for (int t = 0; t < count; ++t) {
        Matrix b;
        Vector g1, g2;
        for (int i = 0; i < N; ++i) {
            g1(i) = u(rng);
            g2(i) = u(rng);
            for (int j = 0; j < N; ++j) b(i, j) = u(rng);
        }
        const Matrix sym = 0.5 * (b + b.transpose());
        if (kind == 0) out.push_back(sym);
        if (kind == 1) out.push_back(1e3 * g1 * g1.transpose() + 1e3 * g2 * g2.transpose() + 1e-2 * sym);
        if (kind == 2) out.push_back(1e3 * g1 * g1.transpose());
        if (kind == 3) out.push_back(2.0 * Matrix::Identity());
    }
    return out;
}

/// a with the translations of each of the 4 DoFs over the 3 nodes removed
/// from both sides: (I − T Tᵀ) a (I − T Tᵀ), T the orthonormal translations.
Matrix without_translations(const Matrix& a)
{
    Matrix t = Matrix::Identity();
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
            if (i % 4 == j % 4) t(i, j) -= 1.0 / 3.0;
    return t * a * t;
}

template <class Project>
double best_microseconds(const std::vector<Matrix>& m, int repeats, bool absolute, double& sink, Project project)
{
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (const Matrix& a : m) sink += project(a, absolute)(0, 0);
        best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                                  static_cast<double>(m.size()));
    }
    return best;
}

}  // namespace

int main(int argc, char** argv)
{
    int count = 1000, repeats = 5;
    CLI::App app{"bench_psd: microseconds per weft::project_to_psd<double, 12>"};
    app.add_option("--matrices", count, "matrices of each kind")->check(CLI::PositiveNumber);
    app.add_option("--repeats", repeats, "passes over them; the fastest is reported")->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);
    const char* names[] = {"random indefinite", "rank 2 plus small indefinite", "rank 1", "2 I"};
    std::mt19937 rng(1);
    double sink = 0;
    std::printf("{\n  \"benchmark\": \"bench_psd\",\n  \"size\": %d,\n  \"matrices\": %d,\n  \"kinds\": [\n", N, count);
    for (int kind = 0; kind < 4; ++kind) {
        const std::vector<Matrix> m = matrices(kind, count, rng);
        double best[2] = {1e300, 1e300};
        for (int r = 0; r < repeats; ++r) {
            for (int absolute = 0; absolute < 2; ++absolute) {
                const auto t0 = std::chrono::steady_clock::now();
                for (const Matrix& a : m) sink += weft::project_to_psd<double, N>(a, absolute == 1)(0, 0);
                const double us =
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / count;
                best[absolute] = std::min(best[absolute], us);
            }
        }
        std::printf("    {\"kind\": \"%s\", \"clamp_us\": %.3f, \"absolute_us\": %.3f}%s\n", names[kind], best[0],
                    best[1], kind < 3 ? "," : "");
    }
    std::printf("  ],\n  \"translation_invariant_kinds\": [\n");
    const auto whole = [](const Matrix& a, bool absolute) { return weft::project_to_psd<double, N>(a, absolute); };
    const auto complement = [](const Matrix& a, bool absolute) {
        return weft::project_translation_invariant_to_psd<double, 3, 4>(a, absolute);
    };
    for (int kind = 0; kind < 5; ++kind) {
        std::vector<Matrix> m = kind < 4 ? matrices(kind, count, rng) : std::vector<Matrix>(count, Matrix::Zero());
        for (Matrix& a : m) a = without_translations(a);
        std::printf(
            "    {\"kind\": \"%s\", \"whole_clamp_us\": %.3f, \"complement_clamp_us\": %.3f, "
            "\"whole_absolute_us\": %.3f, \"complement_absolute_us\": %.3f}%s\n",
            kind < 4 ? names[kind] : "zero", best_microseconds(m, repeats, false, sink, whole),
            best_microseconds(m, repeats, false, sink, complement), best_microseconds(m, repeats, true, sink, whole),
            best_microseconds(m, repeats, true, sink, complement), kind < 4 ? "," : "");
    }
    std::printf("  ],\n  \"checksum\": %.6e\n}\n", sink);
    return 0;
}
