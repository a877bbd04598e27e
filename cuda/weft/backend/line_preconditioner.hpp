#pragma once
/// @file line_preconditioner.hpp
/// Yarn-line preconditioner for the filtered PCG of pcg.hpp: exact solves of
/// the block-banded restriction of the filtered matrix to node chains
/// (yarns), one thread per chain.
///
/// A LineSet groups chains into families (e.g. warp and weft yarns); the
/// chains of one family are disjoint. Ã_l is the restriction of
/// S A S + (I − S) to chain l = (n_0, n_1, …) keeping the blocks A(n_i, n_j)
/// with |i − j| ≤ bandwidth (constrained rows and columns replaced by identity
/// as in block-Jacobi; a block A does not store is zero):
///   bandwidth 1: block tridiagonal, A(n_i, n_i) and A(n_i, n_{i±1});
///   bandwidth 2: also A(n_i, n_{i±2}), which bending (n_{i−1}, n_i, n_{i+1})
///                couples. For a yarn chain this is the whole principal
///                submatrix of A on the chain, hence SPD when A is SPD,
///                unless other elements (EIL springs, contacts) couple the
///                chain's nodes further apart: banded_line_set cuts the
///                chains there, and solve_filtered_pcg factors the cut ones;
///   bandwidth 3 … max_line_bandwidth: what banded_line_set and
///                colored_line_set widen the band to when asked (`widest`),
///                so that the yarns of a scene with EIL nodes, whose springs
///                couple a yarn's nodes up to six entries apart, are solved
///                whole instead of in pieces; solve_filtered_pcg and the
///                multilevel smoother ask for it. A solve then costs
///                1 + 2·bandwidth block products per entry.
/// The tridiagonal truncation is not SPD in general: on a yarn the bending
/// stencil c (1, −4, 6, −4, 1) on the normal displacement loses its
/// (1, 1) entries, leaving tridiag(−4c, 6c, −4c), which is indefinite where
/// the mass is small next to c. The factorization detects a pivot block that
/// is not positive definite and reports it instead of inverting it.
///
/// Preconditioners (M⁻¹ symmetric):
///   additive:   M⁻¹ = Σ_families Σ_lines R_lᵀ Ã_l⁻¹ R_l
///   symmetric:  symmetric multiplicative Schwarz (block Gauss–Seidel over
///               families F₁ … F_m … F₁), z ← z + M_f⁻¹ S (r − A z) with the
///               residual refreshed by one SpMV between families.
/// Nodes covered by no chain form one more family of single-node chains,
/// i.e. they get block-Jacobi.
///
/// Factorization: block LDLᵀ of the block-banded Ã_l, for bandwidth 1 the
/// block Thomas algorithm S₀ = D₀, S_i = D_i − C_{i−1}ᵀ S_{i−1}⁻¹ C_{i−1};
/// stored as S_i⁻¹ and W_{i,d} = S_i⁻¹ Ū_{i,i+d}, Ū = S Lᵀ the unscaled upper
/// factor. Every application is deterministic: families are processed one
/// after another and the chains of a family write disjoint nodes.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scan.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/core/config.hpp>
#include <weft/core/error.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

/// Largest supported LineSet bandwidth: yarns need 2 (bending), and EIL
/// nodes between the crossings of a yarn couple its nodes up to 6 apart
/// (banded_line_set and colored_line_set widen the band that far on request).
constexpr int max_line_bandwidth = 6;

/// Node chains grouped into families, flattened into device vectors.
///
/// Storage: lines are numbered family by family; the nodes not covered by any
/// given family follow as one extra family of single-node lines (absent when
/// every node is covered). line_ptr() has #lines + 1 offsets into
/// line_nodes(); a position in line_nodes() is a line entry.
class LineSet {
public:
    /// An empty set over zero nodes.
    LineSet() = default;

    /// @param[in] num_nodes  number of nodes of the system (≥ 0)
    /// @param[in] families   families[f][l] = chain of node indices (length ≥ 1),
    ///                       consecutive entries coupled; within a family every
    ///                       node appears at most once
    /// @param[in] bandwidth  1 (block tridiagonal), 2 (also couplings two
    ///                       chain positions apart, e.g. yarn bending), up to
    ///                       max_line_bandwidth
    /// @throws InvalidInput naming families[f][l][i] on an empty line, a node
    ///                      out of range or a node repeated within a family,
    ///                      or naming the bandwidth
    LineSet(Index num_nodes, const std::vector<std::vector<std::vector<Index>>>& families, int bandwidth = 2)
    {
        if (num_nodes < 0) throw InvalidInput(detail::describe("LineSet num_nodes", num_nodes, "must be >= 0"));
        if (bandwidth < 1 || bandwidth > max_line_bandwidth)
            throw InvalidInput(detail::describe("LineSet bandwidth", bandwidth,
                                                ("must be 1 to " + std::to_string(max_line_bandwidth)).c_str()));
        const auto where = [](std::size_t f, std::size_t l) {
            return "LineSet families[" + std::to_string(f) + "][" + std::to_string(l) + "]";
        };
        std::vector<Index> family_ptr(1, 0);
        std::vector<Index> line_ptr(1, 0);
        std::vector<Index> line_nodes;
        std::vector<std::uint8_t> covered(static_cast<std::size_t>(num_nodes), 0);
        // (line, entry) of each node within the current family, for duplicate messages; line −1 = not seen.
        std::vector<std::pair<long long, long long>> seen(static_cast<std::size_t>(num_nodes), {-1, -1});
        for (std::size_t f = 0; f < families.size(); ++f) {
            for (std::size_t l = 0; l < families[f].size(); ++l) {
                const std::vector<Index>& line = families[f][l];
                if (line.empty()) {
                    throw InvalidInput(
                        detail::describe((where(f, l) + ".size()").c_str(), line.size(), "a line needs >= 1 node"));
                }
                for (std::size_t i = 0; i < line.size(); ++i) {
                    const Index node = line[i];
                    const auto field = [&] { return where(f, l) + "[" + std::to_string(i) + "] node"; };
                    if (node < 0 || node >= num_nodes) {
                        throw InvalidInput(detail::describe(
                            field().c_str(), node,
                            ("must be in [0, num_nodes = " + std::to_string(num_nodes) + ")").c_str()));
                    }
                    auto& previous = seen[static_cast<std::size_t>(node)];
                    if (previous.first >= 0) {
                        const std::string first = where(f, static_cast<std::size_t>(previous.first)) + "[" +
                                                  std::to_string(previous.second) + "]";
                        throw InvalidInput(detail::describe(
                            field().c_str(), node,
                            ("already appears as " + first + "; the lines of a family must be disjoint").c_str()));
                    }
                    previous = {static_cast<long long>(l), static_cast<long long>(i)};
                    covered[static_cast<std::size_t>(node)] = 1;
                    line_nodes.push_back(node);
                }
                line_ptr.push_back(static_cast<Index>(line_nodes.size()));
            }
            for (const auto& line : families[f]) {
                for (Index node : line) seen[static_cast<std::size_t>(node)] = {-1, -1};
            }
            family_ptr.push_back(static_cast<Index>(line_ptr.size() - 1));
        }
        m_family_count = static_cast<int>(families.size());
        for (Index node = 0; node < num_nodes; ++node) {
            if (covered[static_cast<std::size_t>(node)]) continue;
            line_nodes.push_back(node);
            line_ptr.push_back(static_cast<Index>(line_nodes.size()));
            ++m_uncovered;
        }
        if (m_uncovered > 0) family_ptr.push_back(static_cast<Index>(line_ptr.size() - 1));
        m_num_nodes = num_nodes;
        m_bandwidth = bandwidth;
        m_family_line_ptr = family_ptr;
        // A family runs across the node order where most consecutive entries
        // of its lines are not neighbours in it (e.g. the weft yarns of a
        // cloth numbered warp yarn by warp yarn).
        m_across_memory.assign(family_ptr.size() - 1, 0);
        for (std::size_t f = 0; f + 1 < family_ptr.size(); ++f) {
            std::size_t steps = 0, far = 0;
            for (Index l = family_ptr[f]; l < family_ptr[f + 1]; ++l) {
                for (Index e = line_ptr[static_cast<std::size_t>(l)] + 1; e < line_ptr[static_cast<std::size_t>(l) + 1];
                     ++e) {
                    const Index step =
                        line_nodes[static_cast<std::size_t>(e)] - line_nodes[static_cast<std::size_t>(e) - 1];
                    steps += 1;
                    far += step > 1 || step < -1 ? 1 : 0;
                }
            }
            m_across_memory[f] = 2 * far > steps ? 1 : 0;
        }
        m_host_line_ptr = line_ptr;
        m_host_line_nodes = line_nodes;
        m_line_ptr.assign(line_ptr.begin(), line_ptr.end());
        m_line_nodes.assign(line_nodes.begin(), line_nodes.end());
    }

    /// Number of nodes of the system the set was built for.
    Index node_count() const { return m_num_nodes; }
    /// Largest |i − j| of the kept blocks A(n_i, n_j) of a line.
    int bandwidth() const { return m_bandwidth; }

    /// Give each line its own half-bandwidth (banded_line_set and
    /// colored_line_set do, from the matrix's couplings): the line factors
    /// and solves of line l then run to bands[l] instead of bandwidth(). The
    /// factors are stored bandwidth() per entry either way, and where a
    /// line's couplings all lie within bands[l] entries the result is the
    /// same (the band's blocks beyond it are exact zeros: a banded
    /// factorization has no fill outside its band).
    /// @param[in] bands  #lines (uncovered single-node lines included), each ≤ bandwidth()
    /// @throws InvalidInput naming the size or the first band out of range
    void set_line_bands(const std::vector<std::uint8_t>& bands)
    {
        if (bands.size() != static_cast<std::size_t>(line_count())) {
            throw InvalidInput(detail::describe("LineSet line bands size", bands.size(),
                                                ("must equal line_count() = " + std::to_string(line_count())).c_str()));
        }
        for (std::size_t l = 0; l < bands.size(); ++l) {
            if (bands[l] > m_bandwidth) {
                throw InvalidInput(detail::describe(
                    ("LineSet line bands[" + std::to_string(l) + "]").c_str(), static_cast<int>(bands[l]),
                    ("must be at most bandwidth() = " + std::to_string(m_bandwidth)).c_str()));
            }
        }
        m_host_line_bands = bands;
        m_line_bands.assign(bands.begin(), bands.end());
    }
    /// Line l's half-bandwidth: its own (set_line_bands) or bandwidth().
    int line_band(Index l) const
    {
        return m_host_line_bands.empty() ? m_bandwidth : m_host_line_bands[static_cast<std::size_t>(l)];
    }
    /// #lines bands on the device (set_line_bands), or nullptr: every line
    /// runs to bandwidth().
    const std::uint8_t* line_bands_data() const
    {
        return m_line_bands.empty() ? nullptr : thrust::raw_pointer_cast(m_line_bands.data());
    }
    /// Number of families given to the constructor.
    int family_count() const { return m_family_count; }
    /// Nodes on no given line (preconditioned by their diagonal block).
    Index uncovered_node_count() const { return m_uncovered; }
    /// Families as processed: the given ones, then the uncovered nodes if any.
    int sweep_family_count() const { return static_cast<int>(m_family_line_ptr.size()) - 1; }
    /// First line of sweep family f (f = sweep_family_count() gives #lines).
    Index family_first_line(int f) const { return m_family_line_ptr[static_cast<std::size_t>(f)]; }
    /// Whether most consecutive entries of sweep family f's lines are not
    /// neighbours in the node order (their matrix rows lie apart in memory;
    /// order_line_rows copies such families' rows in line order).
    bool family_across_memory(int f) const { return m_across_memory[static_cast<std::size_t>(f)] != 0; }
    /// Number of lines, uncovered single-node lines included.
    Index line_count() const { return m_family_line_ptr.back(); }
    /// Number of line entries (Σ line lengths, uncovered nodes included).
    Index entry_count() const { return static_cast<Index>(m_line_nodes.size()); }

    /// #lines + 1 offsets into line_nodes().
    const thrust::device_vector<Index>& line_ptr() const { return m_line_ptr; }
    /// #entries node indices, line after line.
    const thrust::device_vector<Index>& line_nodes() const { return m_line_nodes; }
    /// Whether this set came from colored_line_set: no block of the matrix it
    /// was coloured for couples two lines of one family (what sweep_lines needs).
    bool classes_uncoupled() const { return m_classes_uncoupled; }
    /// Marks the set as colored_line_set's (called by it).
    void mark_classes_uncoupled() { m_classes_uncoupled = true; }
    /// Host copies of line_ptr() and line_nodes() (colored_line_set and the
    /// multilevel smoother's change check read them without a device transfer).
    const std::vector<Index>& host_line_ptr() const { return m_host_line_ptr; }
    const std::vector<Index>& host_line_nodes() const { return m_host_line_nodes; }

private:
    Index m_num_nodes = 0;
    int m_bandwidth = 2;
    int m_family_count = 0;
    Index m_uncovered = 0;
    bool m_classes_uncoupled = false;
    std::vector<Index> m_family_line_ptr = std::vector<Index>(1, 0);
    std::vector<std::uint8_t> m_across_memory;  ///< per sweep family, family_across_memory()
    std::vector<Index> m_host_line_ptr = std::vector<Index>(1, 0);
    std::vector<Index> m_host_line_nodes;
    std::vector<std::uint8_t> m_host_line_bands;  ///< set_line_bands, or empty
    thrust::device_vector<Index> m_line_ptr = thrust::device_vector<Index>(1, 0);
    thrust::device_vector<Index> m_line_nodes;
    thrust::device_vector<std::uint8_t> m_line_bands;
};

/// The yarns of a model as a LineSet of bandwidth 2: family 0 the u-yarns
/// (coordinate 3), family 1 the v-yarns (coordinate 4), each yarn one line in
/// node order.
/// @throws InvalidInput as LineSet does (e.g. two u-yarns sharing a node)
template <typename T>
LineSet yarn_line_set(const YarnModel<T>& model)
{
    std::vector<std::vector<std::vector<Index>>> families(2);
    for (std::size_t y = 0; y < model.yarns.size(); ++y) {
        const int coordinate = y < model.yarn_coordinate.size() ? model.yarn_coordinate[y] : -1;
        if (coordinate != 3 && coordinate != 4) {
            throw InvalidInput(detail::describe(("yarn_line_set yarn_coordinate[" + std::to_string(y) + "]").c_str(),
                                                coordinate, "must be 3 (u) or 4 (v)"));
        }
        families[static_cast<std::size_t>(coordinate - 3)].emplace_back(model.yarns[y].begin(), model.yarns[y].end());
    }
    return LineSet(model.node_count(), families, 2);
}

namespace line_detail {

/// A host copy of a matrix's block pattern (row offsets, block columns),
/// for the line cuts below.
struct HostPattern {
    std::vector<Index> row_ptr;
    std::vector<Index> col_idx;
};

template <typename T, int B>
HostPattern host_pattern(const BsrMatrix<T, B>& a, const LineSet& lines, const char* caller)
{
    if (a.block_rows() != lines.node_count()) {
        throw InvalidInput(
            detail::describe((std::string(caller) + " matrix block rows").c_str(), a.block_rows(),
                             ("must equal LineSet node_count() = " + std::to_string(lines.node_count())).c_str()));
    }
    HostPattern pattern{std::vector<Index>(a.row_ptr().size()), std::vector<Index>(a.col_idx().size())};
    thrust::copy(a.row_ptr().begin(), a.row_ptr().end(), pattern.row_ptr.begin());  // one bulk copy each
    thrust::copy(a.col_idx().begin(), a.col_idx().end(), pattern.col_idx.begin());
    return pattern;
}

/// For each entry i of line l in order (counted from the line's first),
/// visit(i, node_i, each_position), where each_position(f) calls f(p) for
/// every stored block A(node_i, node_p) whose column is entry p of the same
/// line. `owner` (#nodes, all −1) is scratch, left all −1.
template <typename Visit>
void visit_line_rows(const HostPattern& a, const LineSet& lines, Index l, std::vector<Index>& owner, Visit&& visit)
{
    using std::size_t;
    const std::vector<Index>& line_ptr = lines.host_line_ptr();
    const std::vector<Index>& line_nodes = lines.host_line_nodes();
    const Index first = line_ptr[static_cast<size_t>(l)], length = line_ptr[static_cast<size_t>(l) + 1] - first;
    for (Index i = 0; i < length; ++i) owner[static_cast<size_t>(line_nodes[static_cast<size_t>(first + i)])] = i;
    for (Index i = 0; i < length; ++i) {
        const Index node = line_nodes[static_cast<size_t>(first + i)];
        visit(i, node, [&](auto&& f) {
            for (Index k = a.row_ptr[static_cast<size_t>(node)]; k < a.row_ptr[static_cast<size_t>(node) + 1]; ++k) {
                const Index p = owner[static_cast<size_t>(a.col_idx[static_cast<size_t>(k)])];
                if (p >= 0) f(p);
            }
        });
    }
    for (Index i = 0; i < length; ++i) owner[static_cast<size_t>(line_nodes[static_cast<size_t>(first + i)])] = -1;
}

/// A family's lines cut into pieces (band_pieces), with each piece's reach:
/// its farthest coupling in entries along it (≤ the band).
struct BandPieces {
    std::vector<std::vector<Index>> pieces;
    std::vector<std::uint8_t> reaches;
};

/// Sweep family f's lines cut into pieces whose couplings lie within the
/// band: a line is cut before node i where i is coupled (a stored block
/// A(i, j)) to a node j of the same piece more than `band` entries before
/// it. `owner` (#nodes, all −1) is scratch, left all −1.
inline BandPieces band_pieces(const HostPattern& a, const LineSet& lines, int f, std::vector<Index>& owner, Index band)
{
    BandPieces out;
    for (Index l = lines.family_first_line(f); l < lines.family_first_line(f + 1); ++l) {
        Index start = 0;
        out.pieces.emplace_back();
        out.reaches.push_back(0);
        visit_line_rows(a, lines, l, owner, [&](Index i, Index node, const auto& each_position) {
            bool far = false;
            Index reach = 0;
            each_position([&](Index p) {
                far = far || (p >= start && p < i - band);
                if (p >= start && p < i) reach = std::max(reach, i - p);
            });
            if (far) {
                out.pieces.emplace_back();
                out.reaches.push_back(0);
                start = i;
                reach = 0;  // the new piece's first entry
            }
            out.pieces.back().push_back(node);
            out.reaches.back() = static_cast<std::uint8_t>(std::max<Index>(out.reaches.back(), reach));
        });
    }
    return out;
}

/// The band for banded_line_set and colored_line_set: lines.bandwidth(), or
/// where `widest` is larger, the farthest coupling of two nodes of one line
/// (in entries along it, over every line of the set), at least
/// lines.bandwidth() and at most `widest` (couplings farther still are cut).
inline int chosen_band(const HostPattern& a, const LineSet& lines, int widest, std::vector<Index>& owner)
{
    if (widest <= lines.bandwidth()) return lines.bandwidth();
    if (widest > max_line_bandwidth) {
        throw InvalidInput(
            detail::describe("line band widest", widest,
                             ("must be at most max_line_bandwidth = " + std::to_string(max_line_bandwidth)).c_str()));
    }
    Index reach = lines.bandwidth();
    for (Index l = 0; l < lines.line_count() && reach < widest; ++l) {
        visit_line_rows(a, lines, l, owner, [&](Index i, Index, const auto& each_position) {
            each_position([&](Index p) {
                if (i - p > reach) reach = std::min<Index>(i - p, widest);
            });
        });
    }
    return static_cast<int>(reach);
}

/// The LineSet of `families` with half-bandwidth `band`, each line with its
/// own band from `family_bands` (parallel to `families`); the single-node
/// lines of nodes on no line get 0.
inline LineSet with_line_bands(Index num_nodes, const std::vector<std::vector<std::vector<Index>>>& families,
                               const std::vector<std::vector<std::uint8_t>>& family_bands, int band)
{
    LineSet set(num_nodes, families, band);
    std::vector<std::uint8_t> bands;  // per line, in the set's order
    for (const auto& family : family_bands) bands.insert(bands.end(), family.begin(), family.end());
    bands.resize(static_cast<std::size_t>(set.line_count()), 0);
    set.set_line_bands(bands);
    return set;
}

}  // namespace line_detail

/// The lines of `lines` cut where `a` couples two nodes of a line more than
/// the bandwidth apart (an EIL element or a contact can couple yarn nodes
/// further apart than bending does), so that each piece's band holds all of
/// its couplings: the band of each piece is then the principal submatrix of
/// A on it, symmetric positive definite when A is. Without the cut the band
/// drops those blocks, and the truncated band of an SPD matrix can be
/// indefinite (the yarn-line preconditioner then fails to factor). The
/// families and their order are kept; host work, O(stored blocks).
/// With `widest` above lines.bandwidth() the band is first widened, up to
/// `widest` entries, to the farthest coupling within a line, so that fewer
/// lines are cut (line_detail::chosen_band); the result has that bandwidth,
/// and each of its lines its own band, the farthest coupling within it
/// (LineSet::set_line_bands: a line solve costs 1 + 2·b block products per
/// entry, so the lines that need less than the widest do not pay for it).
/// @throws InvalidInput when the matrix's block rows differ from
///         lines.node_count(), or `widest` exceeds max_line_bandwidth
template <typename T, int B>
LineSet banded_line_set(const BsrMatrix<T, B>& a, const LineSet& lines, int widest = 0)
{
    const line_detail::HostPattern pattern = line_detail::host_pattern(a, lines, "banded_line_set");
    std::vector<Index> owner(static_cast<std::size_t>(lines.node_count()), Index(-1));
    const int band = line_detail::chosen_band(pattern, lines, widest, owner);
    std::vector<std::vector<std::vector<Index>>> families;
    std::vector<std::vector<std::uint8_t>> family_bands;
    for (int f = 0; f < lines.family_count(); ++f) {
        line_detail::BandPieces cut = line_detail::band_pieces(pattern, lines, f, owner, band);
        families.push_back(std::move(cut.pieces));
        family_bands.push_back(std::move(cut.reaches));
    }
    return line_detail::with_line_bands(lines.node_count(), families, family_bands, band);
}

/// The lines of `lines` regrouped so that no two lines of a family are
/// coupled by a block of `a`'s pattern: each line is first cut as
/// banded_line_set cuts it, so that each piece's band holds all of its
/// couplings;
/// then each sweep family's pieces (the uncovered nodes' single-node lines
/// included) are split into colour classes by a greedy colouring in order
/// (two pieces of a family are neighbours where some A(i, j) is stored with
/// i on one and j on the other), and the classes become the families,
/// family by family, colour by colour. A family update of the result solves
/// the principal submatrix of A on the union of its lines exactly: an
/// A-orthogonal projection,
/// so a multiplicative sweep over the families (sweep_lines) contracts in
/// the energy norm whatever the coupling between lines (block Gauss–Seidel
/// by lines). Host work, O(stored blocks). `widest` widens the band first,
/// as for banded_line_set, and each line gets its own band as there.
/// @throws InvalidInput when the matrix's block rows differ from
///         lines.node_count(), or `widest` exceeds max_line_bandwidth
template <typename T, int B>
LineSet colored_line_set(const BsrMatrix<T, B>& a, const LineSet& lines, int widest = 0)
{
    using std::size_t;
    const line_detail::HostPattern pattern = line_detail::host_pattern(a, lines, "colored_line_set");
    const std::vector<Index>& row_ptr = pattern.row_ptr;
    const std::vector<Index>& col_idx = pattern.col_idx;
    std::vector<std::vector<std::vector<Index>>> families;
    std::vector<std::vector<std::uint8_t>> family_bands;  // the pieces' reaches, as families holds them
    std::vector<Index> owner(static_cast<size_t>(lines.node_count()), Index(-1));  // piece, or position in a line
    const int band = line_detail::chosen_band(pattern, lines, widest, owner);
    for (int f = 0; f < lines.sweep_family_count(); ++f) {
        line_detail::BandPieces cut = line_detail::band_pieces(pattern, lines, f, owner, band);
        std::vector<std::vector<Index>>& pieces = cut.pieces;
        // Greedy colouring of the pieces in order.
        for (size_t p = 0; p < pieces.size(); ++p)
            for (Index node : pieces[p]) owner[static_cast<size_t>(node)] = static_cast<Index>(p);
        std::vector<int> color(pieces.size(), -1);
        std::vector<size_t> used_by;  // used_by[c] == p + 1: colour c is taken by a neighbour of piece p
        int colors = 0;
        for (size_t p = 0; p < pieces.size(); ++p) {
            for (Index node : pieces[p]) {
                for (Index k = row_ptr[static_cast<size_t>(node)]; k < row_ptr[static_cast<size_t>(node) + 1]; ++k) {
                    const Index other = owner[static_cast<size_t>(col_idx[static_cast<size_t>(k)])];
                    if (other < 0 || static_cast<size_t>(other) == p) continue;
                    const int c = color[static_cast<size_t>(other)];
                    if (c >= 0) used_by[static_cast<size_t>(c)] = p + 1;
                }
            }
            int c = 0;
            while (c < colors && used_by[static_cast<size_t>(c)] == p + 1) ++c;
            if (c == colors) {
                ++colors;
                used_by.push_back(0);
            }
            color[p] = c;
        }
        const size_t base = families.size();
        families.resize(base + static_cast<size_t>(colors));
        family_bands.resize(base + static_cast<size_t>(colors));
        for (size_t p = 0; p < pieces.size(); ++p) {
            families[base + static_cast<size_t>(color[p])].push_back(std::move(pieces[p]));
            family_bands[base + static_cast<size_t>(color[p])].push_back(cut.reaches[p]);
            for (Index node : families[base + static_cast<size_t>(color[p])].back())
                owner[static_cast<size_t>(node)] = -1;
        }
    }
    LineSet colored = line_detail::with_line_bands(lines.node_count(), families, family_bands, band);
    colored.mark_classes_uncoupled();
    return colored;
}

/// Factors of the line preconditioner for one matrix and filter, and its
/// scratch vectors. Sized on demand; contents are unspecified after a failed
/// factorization.
template <typename T, int B>
struct LineFactors {
    thrust::device_vector<T> inverse_pivots;  ///< #entries · B·B, row-major S_i⁻¹
    thrust::device_vector<T> couplings;       ///< #entries · bandwidth · B·B, W_{i,d} (d = 1 … bandwidth)
    thrust::device_vector<T> scratch;         ///< #entries · B, S_i⁻¹ g_i of the forward sweep
    thrust::device_vector<T> sweep_residual;  ///< #DoFs, residual between families (symmetric variant)
    /// Float copies of inverse_pivots and couplings (round_to_float(); used
    /// by sweep_lines with a float matrix).
    thrust::device_vector<float> inverse_pivots_single, couplings_single;
    /// The matrix rows of the lines of the families that run across the node
    /// order (LineSet::family_across_memory), copied in line-entry order by
    /// order_line_rows: entry e's row at [ordered_row_ptr[e],
    /// ordered_row_ptr[e + 1]) of ordered_col_idx and of ordered_values (or
    /// ordered_values_single), empty for the entries of the other families.
    thrust::device_vector<Index> ordered_row_ptr;  ///< #entries + 1
    thrust::device_vector<Index> ordered_col_idx;
    thrust::device_vector<T> ordered_values;
    thrust::device_vector<float> ordered_values_single;
    /// Which copy order_line_rows made since the last factor_lines: none,
    /// A's values (double_rows) or their float copy (single_rows).
    enum class OrderedRows { none, double_rows, single_rows } ordered_rows = OrderedRows::none;

    /// Size the vectors for `lines` (no-op when already sized).
    void resize(const LineSet& lines)
    {
        const std::size_t entries = static_cast<std::size_t>(lines.entry_count());
        inverse_pivots.resize(entries * (B * B));
        couplings.resize(entries * (static_cast<std::size_t>(lines.bandwidth()) * B * B));
        scratch.resize(entries * B);
        sweep_residual.resize(static_cast<std::size_t>(lines.node_count()) * B);
    }

    /// Fill the float copies from the factors (after factor_lines).
    void round_to_float()
    {
        bsr_detail::round_to_float(inverse_pivots, inverse_pivots_single);
        bsr_detail::round_to_float(couplings, couplings_single);
    }
};

namespace line_detail {

/// out = L⁻ᵀ L⁻¹ for the SPD matrix whose lower triangle is `l` (overwritten
/// by its Cholesky factor), computed in T and stored as TO. Returns false,
/// writing nothing, when a pivot is not positive and finite. The line
/// factors' pivots and block Jacobi's diagonal blocks
/// (pcg_detail::InvertFilteredDiagonal) both invert through it, so a line
/// preconditioner of one-node lines is block Jacobi bit for bit.
template <typename T, int B, typename TO = T>
WEFT_HD inline bool invert_spd_lower(T (&l)[B][B], TO* out)
{
    using std::sqrt;
    for (int j = 0; j < B; ++j) {
        T pivot = l[j][j];
        for (int p = 0; p < j; ++p) pivot -= l[j][p] * l[j][p];
        if (!(pivot > T(0) && pivot <= std::numeric_limits<T>::max())) return false;
        l[j][j] = sqrt(pivot);
        for (int i = j + 1; i < B; ++i) {
            T sum = l[i][j];
            for (int p = 0; p < j; ++p) sum -= l[i][p] * l[j][p];
            l[i][j] = sum / l[j][j];
        }
    }
    for (int c = 0; c < B; ++c) {
        T y[B];
        for (int i = 0; i < B; ++i) {
            T sum = i == c ? T(1) : T(0);
            for (int p = 0; p < i; ++p) sum -= l[i][p] * y[p];
            y[i] = sum / l[i][i];
        }
        for (int i = B - 1; i >= 0; --i) {
            T sum = y[i];
            for (int p = i + 1; p < B; ++p) sum -= l[p][i] * y[p];
            y[i] = sum / l[i][i];
        }
        for (int r = 0; r < B; ++r) out[r * B + c] = static_cast<TO>(y[r]);
    }
    return true;
}

/// Block LDLᵀ factorization of one line of S A S + (I − S), half-bandwidth
/// b = the line's band (line_bands, else `bandwidth`; ≤ max_line_bandwidth) in
/// blocks, the sums running over d, k within b:
///   S_i = D_i − Σ_d W_{i−d,d}ᵀ Ū_{i−d,i},   Ū_{i,i+d} = A_{i,i+d} − Σ_k W_{k,i−k}ᵀ Ū_{k,i+d},
///   W_{i,d} = S_i⁻¹ Ū_{i,i+d}   (bandwidth 1: the block Thomas algorithm).
/// Returns 1 when a pivot block S_i is not positive definite (the line's
/// factors are then incomplete), else 0.
template <typename T, int B>
struct FactorLine {
    const BsrConstView<T, B> a;
    const std::uint8_t* const free_dofs;   ///< #DoFs
    const Index* const line_ptr;           ///< #lines + 1
    const Index* const line_nodes;         ///< #entries
    const int bandwidth;                   ///< 1 … max_line_bandwidth: the factors' stride per entry
    const std::uint8_t* const line_bands;  ///< #lines, each ≤ bandwidth, or nullptr: every line's is bandwidth
    T* const inverse_pivots;               ///< #entries · B·B
    T* const couplings;                    ///< #entries · bandwidth · B·B
    /// #nodes, or nullptr: a line none of whose nodes is marked keeps its
    /// factors (they must be those of the same values on its rows).
    const std::uint8_t* const changed_nodes = nullptr;

    /// out = filtered A(row_node, col_node), zero when not stored.
    WEFT_HD void load_coupling(Index row_node, Index col_node, T (&out)[B][B]) const
    {
        const std::uint8_t* row_free = free_dofs + static_cast<std::size_t>(row_node) * B;
        const std::uint8_t* col_free = free_dofs + static_cast<std::size_t>(col_node) * B;
        const Index k = bsr_find_block(a.row_ptr, a.col_idx, row_node, col_node);
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c < B; ++c) {
                const bool kept = k >= 0 && row_free[r] && col_free[c];
                out[r][c] = kept ? a.values[static_cast<std::size_t>(k) * (B * B) + r * B + c] : T(0);
            }
        }
    }

    WEFT_HD int operator()(Index line) const
    {
        const Index first = line_ptr[line];
        const Index last = line_ptr[line + 1];
        if (changed_nodes != nullptr) {
            bool changed = false;
            for (Index e = first; e < last && !changed; ++e) changed = changed_nodes[line_nodes[e]] != 0;
            if (!changed) return 0;
        }
        // upper[j][d − 1] = Ū_{i−j, i−j+d} for the previous entries j = 1 … band;
        // upper[0] holds the current entry's row.
        T upper[max_line_bandwidth + 1][max_line_bandwidth][B][B] = {};
        const std::size_t stride = static_cast<std::size_t>(bandwidth);
        const int band = line_bands != nullptr ? line_bands[line] : bandwidth;
        for (Index e = first; e < last; ++e) {
            const Index node = line_nodes[e];
            const std::uint8_t* is_free = free_dofs + static_cast<std::size_t>(node) * B;
            const Index k = bsr_find_block(a.row_ptr, a.col_idx, node, node);
            T pivot[B][B];  // lower triangle of S_i
            for (int r = 0; r < B; ++r) {
                for (int c = 0; c <= r; ++c) {
                    const bool kept = is_free[r] && is_free[c];
                    const T stored = k >= 0 ? a.values[static_cast<std::size_t>(k) * (B * B) + r * B + c] : T(0);
                    pivot[r][c] = kept ? stored : (r == c ? T(1) : T(0));
                }
            }
            for (int d = 1; d <= band && e - d >= first; ++d) {
                const T* w = couplings + (static_cast<std::size_t>(e - d) * stride + (d - 1)) * (B * B);
                const T(&u)[B][B] = upper[d][d - 1];  // Ū_{i−d, i}
                for (int r = 0; r < B; ++r) {
                    for (int c = 0; c <= r; ++c) {
                        T sum = T(0);
                        for (int p = 0; p < B; ++p) sum += w[p * B + r] * u[p][c];
                        pivot[r][c] -= sum;
                    }
                }
            }
            T* inverse = inverse_pivots + static_cast<std::size_t>(e) * (B * B);
            if (!invert_spd_lower<T, B>(pivot, inverse)) return 1;
            // Ū_{i,i+d} = A_{i,i+d} − Σ_{j = 1 … band − d} W_{i−j,j}ᵀ Ū_{i−j,i+d}, then W_{i,d}.
            for (int d = 1; d <= band && e + d < last; ++d) {
                T(&u)[B][B] = upper[0][d - 1];
                load_coupling(node, line_nodes[e + d], u);
                for (int j = 1; j <= band - d && e - j >= first; ++j) {
                    const T* w = couplings + (static_cast<std::size_t>(e - j) * stride + (j - 1)) * (B * B);
                    const T(&u_previous)[B][B] = upper[j][j + d - 1];  // Ū_{i−j, i+d}
                    for (int r = 0; r < B; ++r) {
                        for (int c = 0; c < B; ++c) {
                            T sum = T(0);
                            for (int p = 0; p < B; ++p) sum += w[p * B + r] * u_previous[p][c];
                            u[r][c] -= sum;
                        }
                    }
                }
                T* w = couplings + (static_cast<std::size_t>(e) * stride + (d - 1)) * (B * B);
                for (int r = 0; r < B; ++r) {
                    for (int c = 0; c < B; ++c) {
                        T sum = T(0);
                        for (int p = 0; p < B; ++p) sum += inverse[r * B + p] * u[p][c];
                        w[r * B + c] = sum;
                    }
                }
            }
            for (int j = band; j >= 1; --j) {
                for (int d = 0; d < band; ++d) {
                    for (int r = 0; r < B; ++r) {
                        for (int c = 0; c < B; ++c) upper[j][d][r][c] = upper[j - 1][d][r][c];
                    }
                }
            }
        }
        return 0;
    }
};

/// output += ω Ã_l⁻¹ input on one line's nodes, by block forward and backward
/// substitution: g_i = r_i − Σ_d W_{i−d,d}ᵀ g_{i−d}; h_i = S_i⁻¹ g_i;
/// y_i = h_i − Σ_d W_{i,d} y_{i+d}, d = 1 … the line's band (line_bands, else
/// `bandwidth`): 1 + 2·b block products per entry.
/// The factors are stored as TF (float for a single-precision sweep, each
/// entry widened to T before its product).
template <typename T, int B, typename TF = T>
struct SolveLine {
    const Index* const line_ptr;           ///< #lines + 1
    const Index* const line_nodes;         ///< #entries
    const int bandwidth;                   ///< 1 … max_line_bandwidth: the factors' stride per entry
    const std::uint8_t* const line_bands;  ///< #lines, each ≤ bandwidth, or nullptr: every line's is bandwidth
    const TF* const inverse_pivots;        ///< #entries · B·B
    const TF* const couplings;             ///< #entries · bandwidth · B·B
    const T* const input;                  ///< #DoFs
    const T weight;                        ///< ω
    T* const scratch;                      ///< #entries · B
    T* const output;                       ///< #DoFs

    WEFT_HD void operator()(Index line) const
    {
        const Index first = line_ptr[line];
        const Index last = line_ptr[line + 1];
        T previous[max_line_bandwidth][B] = {};  // g_{i−1}, g_{i−2}, …, then y_{i+1}, y_{i+2}, …
        const std::size_t stride = static_cast<std::size_t>(bandwidth);
        const int band = line_bands != nullptr ? line_bands[line] : bandwidth;
        for (Index e = first; e < last; ++e) {
            const T* r = input + static_cast<std::size_t>(line_nodes[e]) * B;
            T g[B];
            for (int i = 0; i < B; ++i) g[i] = r[i];
            // Farthest entry first: g_{i−1}, the one the entry before has
            // just formed, enters last, so the chain from entry to entry is
            // one block product long, not `band` of them.
            for (int d = band < e - first ? band : static_cast<int>(e - first); d >= 1; --d) {
                const TF* w = couplings + (static_cast<std::size_t>(e - d) * stride + (d - 1)) * (B * B);
                for (int i = 0; i < B; ++i) {
                    for (int p = 0; p < B; ++p) g[i] -= static_cast<T>(w[p * B + i]) * previous[d - 1][p];
                }
            }
            const TF* inverse = inverse_pivots + static_cast<std::size_t>(e) * (B * B);
            T* h = scratch + static_cast<std::size_t>(e) * B;
            for (int i = 0; i < B; ++i) {
                T sum = T(0);
                for (int p = 0; p < B; ++p) sum += static_cast<T>(inverse[i * B + p]) * g[p];
                h[i] = sum;
                for (int d = band - 1; d >= 1; --d) previous[d][i] = previous[d - 1][i];
                previous[0][i] = g[i];
            }
        }
        for (Index e = last - 1; e >= first; --e) {
            const T* h = scratch + static_cast<std::size_t>(e) * B;
            T y[B];
            for (int i = 0; i < B; ++i) y[i] = h[i];
            for (int d = band < last - 1 - e ? band : static_cast<int>(last - 1 - e); d >= 1; --d) {  // as above
                const TF* w = couplings + (static_cast<std::size_t>(e) * stride + (d - 1)) * (B * B);
                for (int i = 0; i < B; ++i) {
                    for (int p = 0; p < B; ++p) y[i] -= static_cast<T>(w[i * B + p]) * previous[d - 1][p];
                }
            }
            T* out = output + static_cast<std::size_t>(line_nodes[e]) * B;
            for (int i = 0; i < B; ++i) {
                out[i] += weight * y[i];
                for (int d = band - 1; d >= 1; --d) previous[d][i] = previous[d - 1][i];
                previous[0][i] = y[i];
            }
        }
    }
};

/// One line of a family whose lines no block couples (colored_line_set):
/// the residual S (r − A z) on the line's rows, then its solve added to z.
/// Another line's thread never reads the z this one writes, since no row of
/// one line has a block in the other's columns.
/// With `ordered_row_ptr` (LineFactors::ordered_row_ptr) the rows are read
/// from their copy in line-entry order: one stream per line instead of rows
/// far apart in memory, and the same bits.
template <typename T, int B, typename TA = T, typename TF = T>
struct ResidualThenSolveLine {
    const bsr_detail::FilteredResidual<T, B, TA> residual;  ///< writes solve.input
    const SolveLine<T, B, TF> solve;
    const Index* const ordered_row_ptr = nullptr;  ///< #entries + 1, or nullptr: A's own rows
    const Index* const ordered_col_idx = nullptr;
    const TA* const ordered_values = nullptr;

    WEFT_HD void operator()(Index line) const
    {
        for (Index e = solve.line_ptr[line]; e < solve.line_ptr[line + 1]; ++e) {
            if (ordered_row_ptr != nullptr) {
                residual.from_copy(solve.line_nodes[e], ordered_col_idx, ordered_values, ordered_row_ptr[e],
                                   ordered_row_ptr[e + 1]);
            } else {
                residual(solve.line_nodes[e]);
            }
        }
        solve(line);
    }
};

/// The length of entry e's matrix row where e's family is copied, else 0.
struct OrderedRowLength {
    const Index* const row_ptr;     ///< A's
    const Index* const line_nodes;  ///< #entries
    WEFT_HD Index operator()(Index e) const { return row_ptr[line_nodes[e] + 1] - row_ptr[line_nodes[e]]; }
};

/// Copies entry e's matrix row (columns and values, TA) to its place in
/// the line-ordered copy.
template <int B, typename TA>
struct CopyOrderedRow {
    const Index* const row_ptr;  ///< A's
    const Index* const col_idx;  ///< A's
    const TA* const values;      ///< A's (or their float copy)
    const Index* const line_nodes;
    const Index* const ordered_row_ptr;
    Index* const ordered_col_idx;  ///< nullptr: the columns are kept
    TA* const ordered_values;
    const std::uint8_t* const changed_nodes = nullptr;  ///< #nodes, or nullptr: the rows of unmarked nodes are kept

    WEFT_HD void operator()(Index e) const
    {
        if (changed_nodes != nullptr && !changed_nodes[line_nodes[e]]) return;
        const Index begin = ordered_row_ptr[e];
        const Index length = ordered_row_ptr[e + 1] - begin;
        const Index source = row_ptr[line_nodes[e]];
        for (Index k = 0; k < length; ++k) {
            if (ordered_col_idx != nullptr) ordered_col_idx[begin + k] = col_idx[source + k];
            const TA* from = values + static_cast<std::size_t>(source + k) * (B * B);
            TA* to = ordered_values + static_cast<std::size_t>(begin + k) * (B * B);
            for (int i = 0; i < B * B; ++i) to[i] = from[i];
        }
    }
};

/// Calls visit(first, last) with the line-entry range of each sweep family
/// that runs across the node order (LineSet::family_across_memory): the
/// entries whose rows order_line_rows copies.
template <class Visit>
void for_each_copied_family(const LineSet& lines, Visit&& visit)
{
    const std::vector<Index>& line_ptr = lines.host_line_ptr();
    for (int f = 0; f < lines.sweep_family_count(); ++f) {
        if (!lines.family_across_memory(f)) continue;
        visit(line_ptr[static_cast<std::size_t>(lines.family_first_line(f))],
              line_ptr[static_cast<std::size_t>(lines.family_first_line(f + 1))]);
    }
}

template <typename T, int B>
void require_line_sizes(const char* caller, const LineSet& lines, const LineFactors<T, B>& factors,
                        const thrust::device_vector<T>& r, const thrust::device_vector<T>& z)
{
    const std::size_t dofs = static_cast<std::size_t>(lines.node_count()) * B;
    const std::string requirement = "must equal B * LineSet node_count() = " + std::to_string(dofs);
    if (r.size() != dofs)
        throw InvalidInput(
            detail::describe((std::string(caller) + " r.size()").c_str(), r.size(), requirement.c_str()));
    if (z.size() != dofs)
        throw InvalidInput(
            detail::describe((std::string(caller) + " z.size()").c_str(), z.size(), requirement.c_str()));
    const std::size_t factor_size = static_cast<std::size_t>(lines.entry_count()) * (B * B);
    if (factors.inverse_pivots.size() != factor_size ||
        factors.couplings.size() != factor_size * static_cast<std::size_t>(lines.bandwidth()) ||
        factors.scratch.size() != static_cast<std::size_t>(lines.entry_count()) * B) {
        throw InvalidInput(detail::describe((std::string(caller) + " factors.inverse_pivots.size()").c_str(),
                                            factors.inverse_pivots.size(),
                                            "factors do not match the LineSet: call factor_lines first"));
    }
}

/// The solve of the lines in `lines` with factors given as TF pointers
/// (the factors' own, or their float copies).
template <typename T, int B, typename TF>
SolveLine<T, B, TF> line_solve(const LineSet& lines, const TF* inverse_pivots, const TF* couplings,
                               LineFactors<T, B>& factors, const T* input, T weight, T* output)
{
    return SolveLine<T, B, TF>{thrust::raw_pointer_cast(lines.line_ptr().data()),
                               thrust::raw_pointer_cast(lines.line_nodes().data()),
                               lines.bandwidth(),
                               lines.line_bands_data(),
                               inverse_pivots,
                               couplings,
                               input,
                               weight,
                               thrust::raw_pointer_cast(factors.scratch.data()),
                               output};
}

/// output += ω Σ_{lines l of sweep family f} R_lᵀ Ã_l⁻¹ R_l input.
template <typename T, int B>
void solve_family(const LineSet& lines, LineFactors<T, B>& factors, int family, const thrust::device_vector<T>& input,
                  T weight, thrust::device_vector<T>& output)
{
    for_each_balanced(
        lines.family_first_line(family), lines.family_first_line(family + 1),
        line_solve(lines, thrust::raw_pointer_cast(factors.inverse_pivots.data()),
                   thrust::raw_pointer_cast(factors.couplings.data()), factors, thrust::raw_pointer_cast(input.data()),
                   weight, thrust::raw_pointer_cast(output.data())));
}

/// sweep_lines with A's values as TA and the factors as TF (see there);
/// `ordered_values` is the line-ordered copy of A's rows as TA, or nullptr.
template <typename T, int B, typename TA, typename TF>
void sweep_line_families(const BsrConstView<TA, B>& a, const std::uint8_t* free_dofs, const LineSet& lines,
                         const TF* inverse_pivots, const TF* couplings, const TA* ordered_values,
                         LineFactors<T, B>& factors, const thrust::device_vector<T>& r, thrust::device_vector<T>& z,
                         bool zero_start, bool forward)
{
    T* const w = thrust::raw_pointer_cast(factors.sweep_residual.data());
    if (zero_start) thrust::fill(thrust::device, z.begin(), z.end(), T(0));
    const int m = lines.sweep_family_count();
    for (int s = 0; s < m; ++s) {
        const int family = forward ? s : m - 1 - s;
        // On CPU threads the lines are shared by a guided schedule (for_each_balanced).
        const Index first = lines.family_first_line(family);
        const Index last = lines.family_first_line(family + 1);
        if (zero_start && s == 0) {  // from z = 0 the first family takes r itself
            for_each_balanced(first, last,
                              line_solve(lines, inverse_pivots, couplings, factors, thrust::raw_pointer_cast(r.data()),
                                         T(1), thrust::raw_pointer_cast(z.data())));
            continue;
        }
        const bool ordered = ordered_values != nullptr && lines.family_across_memory(family);
        for_each_balanced(first, last,
                          ResidualThenSolveLine<T, B, TA, TF>{
                              {a, free_dofs, thrust::raw_pointer_cast(r.data()), thrust::raw_pointer_cast(z.data()), w},
                              line_solve(lines, inverse_pivots, couplings, factors, static_cast<const T*>(w), T(1),
                                         thrust::raw_pointer_cast(z.data())),
                              ordered ? thrust::raw_pointer_cast(factors.ordered_row_ptr.data()) : nullptr,
                              ordered ? thrust::raw_pointer_cast(factors.ordered_col_idx.data()) : nullptr,
                              ordered ? ordered_values : nullptr});
    }
}

}  // namespace line_detail

/// Factor every line's block-banded restriction of S A S + (I − S)
/// (block LDLᵀ; block Thomas algorithm for bandwidth 1), one thread per line.
/// @param[in]  a          square BSR matrix, B·#nodes square, #nodes = lines.node_count()
/// @param[in]  free_dofs  #DoFs filter S: nonzero = free, 0 = constrained
/// @param[in]  lines      node chains
/// @param[out] factors    resized and filled
/// @param[in]  changed_nodes  nullptr, or #nodes flags: only the lines with
///             a flagged node are factored again; the others keep their
///             factors, which must be those of `a`'s current values on
///             their rows (the same lines and filter, values changed only
///             in flagged rows); the line-ordered copy of the rows is kept
///             for order_line_rows to renew where flagged
/// @return number of lines with a pivot block that is not positive definite
///         (0 on success; otherwise the factors must not be applied)
/// @throws InvalidInput on size mismatches, or flags for factors of another size
template <typename T, int B>
Index factor_lines(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs, const LineSet& lines,
                   LineFactors<T, B>& factors, const thrust::device_vector<std::uint8_t>* changed_nodes = nullptr)
{
    if (a.block_rows() != a.block_cols() || a.block_rows() != lines.node_count()) {
        throw InvalidInput(detail::describe(
            "factor_lines matrix block rows", a.block_rows(),
            ("must be square and equal LineSet node_count() = " + std::to_string(lines.node_count())).c_str()));
    }
    if (free_dofs.size() != static_cast<std::size_t>(a.rows())) {
        throw InvalidInput(detail::describe("factor_lines free_dofs.size()", free_dofs.size(),
                                            ("must equal the matrix size " + std::to_string(a.rows())).c_str()));
    }
    if (changed_nodes != nullptr) {
        if (changed_nodes->size() != static_cast<std::size_t>(lines.node_count())) {
            throw InvalidInput(
                detail::describe("factor_lines changed_nodes.size()", changed_nodes->size(),
                                 ("must equal LineSet node_count() = " + std::to_string(lines.node_count())).c_str()));
        }
        if (factors.inverse_pivots.size() != static_cast<std::size_t>(lines.entry_count()) * (B * B)) {
            throw InvalidInput(detail::describe("factor_lines factors.inverse_pivots.size()",
                                                factors.inverse_pivots.size(),
                                                "with changed_nodes the factors must be those of these lines"));
        }
    } else {
        factors.resize(lines);
        factors.ordered_rows = LineFactors<T, B>::OrderedRows::none;
    }
    return thrust::transform_reduce(
        thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(lines.line_count()),
        line_detail::FactorLine<T, B>{
            a.view(), thrust::raw_pointer_cast(free_dofs.data()), thrust::raw_pointer_cast(lines.line_ptr().data()),
            thrust::raw_pointer_cast(lines.line_nodes().data()), lines.bandwidth(), lines.line_bands_data(),
            thrust::raw_pointer_cast(factors.inverse_pivots.data()), thrust::raw_pointer_cast(factors.couplings.data()),
            changed_nodes != nullptr ? thrust::raw_pointer_cast(changed_nodes->data()) : nullptr},
        Index(0), thrust::plus<Index>{});
}

/// Additive line preconditioner: z = Σ_families Σ_lines R_lᵀ Ã_l⁻¹ R_l r
/// (+ block-Jacobi on uncovered nodes). Families are summed in order.
/// @param[in]     lines    node chains
/// @param[in,out] factors  from factor_lines (scratch is overwritten)
/// @param[in]     r        #DoFs, zero on constrained DoFs
/// @param[out]    z        #DoFs, must not alias r
/// @throws InvalidInput on size mismatches or aliasing
template <typename T, int B>
void apply_lines_additive(const LineSet& lines, LineFactors<T, B>& factors, const thrust::device_vector<T>& r,
                          thrust::device_vector<T>& z)
{
    line_detail::require_line_sizes("apply_lines_additive", lines, factors, r, z);
    if (&r == &z) throw InvalidInput("invalid apply_lines_additive arguments: r and z must be different vectors");
    thrust::fill(thrust::device, z.begin(), z.end(), T(0));
    for (int f = 0; f < lines.sweep_family_count(); ++f) line_detail::solve_family(lines, factors, f, r, T(1), z);
}

/// Symmetric multiplicative line preconditioner (symmetric block Gauss–Seidel
/// over the families F₁ … F_m … F₁, m = sweep_family_count()):
///   z ← z + ω M_f⁻¹ S (r − A z) for each family f of the sequence,
/// with one SpMV per residual refresh (2m − 2 in all). M⁻¹ is symmetric; it is
/// positive definite when every family's update contracts in the A-norm,
/// i.e. 2 M_f / ω − S A S is positive definite (block-Jacobi across the lines
/// of a family need not satisfy this for ω = 1 when lines of a family are
/// coupled, e.g. by the other yarn direction's bending).
/// @param[in]     a          the matrix the factors were computed from
/// @param[in]     free_dofs  #DoFs filter used for the factors
/// @param[in]     lines      node chains
/// @param[in,out] factors    from factor_lines (scratch and sweep_residual are overwritten)
/// @param[in]     r          #DoFs, zero on constrained DoFs
/// @param[out]    z          #DoFs, must not alias r
/// @param[in]     weight     relaxation ω of each family update, in (0, 1]
/// @throws InvalidInput on size mismatches, aliasing or a weight out of range
template <typename T, int B>
void apply_lines_symmetric(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
                           const LineSet& lines, LineFactors<T, B>& factors, const thrust::device_vector<T>& r,
                           thrust::device_vector<T>& z, T weight = T(1))
{
    if (!(weight > T(0) && weight <= T(1)))
        throw InvalidInput(detail::describe("apply_lines_symmetric weight", weight, "must be in (0, 1]"));
    line_detail::require_line_sizes("apply_lines_symmetric", lines, factors, r, z);
    if (&r == &z) throw InvalidInput("invalid apply_lines_symmetric arguments: r and z must be different vectors");
    if (a.rows() != static_cast<Index>(r.size()) || free_dofs.size() != r.size()) {
        throw InvalidInput(detail::describe("apply_lines_symmetric matrix rows", a.rows(),
                                            "must equal r.size() and free_dofs.size()"));
    }
    auto& w = factors.sweep_residual;
    thrust::fill(thrust::device, z.begin(), z.end(), T(0));
    const int m = lines.sweep_family_count();
    const int steps = m > 0 ? 2 * m - 1 : 0;
    for (int s = 0; s < steps; ++s) {
        const int family = s < m ? s : 2 * m - 2 - s;
        line_detail::solve_family(lines, factors, family, s == 0 ? r : w, weight, z);
        if (s + 1 == steps) break;
        thrust::for_each(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(a.block_rows()),
            bsr_detail::FilteredResidual<T, B>{a.view(), thrust::raw_pointer_cast(free_dofs.data()),
                                               thrust::raw_pointer_cast(r.data()), thrust::raw_pointer_cast(z.data()),
                                               thrust::raw_pointer_cast(w.data())});
    }
}

/// Copy the matrix rows of the families of `lines` that run across the node
/// order (LineSet::family_across_memory) into `factors`, in line-entry
/// order, so that sweep_lines reads each such line's rows as one stream
/// rather than rows far apart in memory (the same bits). Made from A's values,
/// or from their float copy `single_values` for a single-precision sweep
/// (which then reads the copy only when given the same float values). Call
/// after each factor_lines (which drops the copy); the copy costs one pass
/// over those rows and their memory once more (the copy of the other
/// precision, if any, is freed).
/// @param[in]     a              the matrix the factors were computed from
/// @param[in]     lines          node chains (as given to factor_lines)
/// @param[in,out] factors        from factor_lines; the ordered_* members are filled
/// @param[in]     single_values  nullptr, or a float copy of a's values
/// @param[in]     pattern_kept   a's pattern and `lines` are those of the last
///                call on these factors: the copy's row pointers and columns
///                are kept and only the values are copied (they are formed
///                again where the factors hold none of the right size)
/// @param[in]     changed_nodes  nullptr, or #nodes flags: with the pattern
///                kept and a copy of the same precision in place, only the
///                flagged nodes' rows are copied again (the others' values
///                must not have changed since the last copy)
/// @throws InvalidInput on size mismatches
template <typename T, int B>
void order_line_rows(const BsrMatrix<T, B>& a, const LineSet& lines, LineFactors<T, B>& factors,
                     const thrust::device_vector<float>* single_values = nullptr, bool pattern_kept = false,
                     const thrust::device_vector<std::uint8_t>* changed_nodes = nullptr)
{
    if (a.block_rows() != lines.node_count()) {
        throw InvalidInput(
            detail::describe("order_line_rows matrix block rows", a.block_rows(),
                             ("must equal LineSet node_count() = " + std::to_string(lines.node_count())).c_str()));
    }
    if (factors.inverse_pivots.size() != static_cast<std::size_t>(lines.entry_count()) * (B * B)) {
        throw InvalidInput(detail::describe("order_line_rows factors.inverse_pivots.size()",
                                            factors.inverse_pivots.size(),
                                            "factors do not match the LineSet: call factor_lines first"));
    }
    const Index entries = lines.entry_count();
    auto& row_ptr = factors.ordered_row_ptr;
    const Index* nodes = thrust::raw_pointer_cast(lines.line_nodes().data());
    if (!pattern_kept || row_ptr.size() != static_cast<std::size_t>(entries) + 1) {
        row_ptr.resize(static_cast<std::size_t>(entries) + 1);
        thrust::fill(thrust::device, row_ptr.begin(), row_ptr.end(), Index(0));
        line_detail::for_each_copied_family(lines, [&](Index first, Index last) {
            thrust::transform(thrust::device, thrust::counting_iterator<Index>(first),
                              thrust::counting_iterator<Index>(last), row_ptr.begin() + first,
                              line_detail::OrderedRowLength{a.view().row_ptr, nodes});
        });
        thrust::exclusive_scan(thrust::device, row_ptr.begin(), row_ptr.end(), row_ptr.begin());
        factors.ordered_col_idx.resize(static_cast<std::size_t>(row_ptr.back()));
        pattern_kept = false;
    }
    if (changed_nodes != nullptr && changed_nodes->size() != static_cast<std::size_t>(lines.node_count())) {
        throw InvalidInput(
            detail::describe("order_line_rows changed_nodes.size()", changed_nodes->size(),
                             ("must equal LineSet node_count() = " + std::to_string(lines.node_count())).c_str()));
    }
    const Index blocks = row_ptr.back();
    // The columns are written with the values unless the pattern is kept.
    const auto copy = [&](const auto* values, auto& ordered, auto& other) {
        using TA = std::remove_const_t<std::remove_pointer_t<decltype(values)>>;
        other.clear();
        other.shrink_to_fit();
        // Only flagged rows where a whole copy of this precision is in place.
        const bool partial =
            changed_nodes != nullptr && pattern_kept && ordered.size() == static_cast<std::size_t>(blocks) * (B * B);
        ordered.resize(static_cast<std::size_t>(blocks) * (B * B));
        const line_detail::CopyOrderedRow<B, TA> copy_row{
            a.view().row_ptr,
            a.view().col_idx,
            values,
            nodes,
            thrust::raw_pointer_cast(row_ptr.data()),
            pattern_kept ? nullptr : thrust::raw_pointer_cast(factors.ordered_col_idx.data()),
            thrust::raw_pointer_cast(ordered.data()),
            partial ? thrust::raw_pointer_cast(changed_nodes->data()) : nullptr};
        // Over the copied families' entries only: the others hold no row,
        // and a pass over every entry shares the entries, not the rows
        // copied, among the threads.
        line_detail::for_each_copied_family(lines, [&](Index first, Index last) {
            thrust::for_each(thrust::device, thrust::counting_iterator<Index>(first),
                             thrust::counting_iterator<Index>(last), copy_row);
        });
    };
    if (single_values != nullptr) {
        copy(a.view_with(*single_values).values, factors.ordered_values_single, factors.ordered_values);
        factors.ordered_rows = LineFactors<T, B>::OrderedRows::single_rows;
    } else {
        copy(a.view().values, factors.ordered_values, factors.ordered_values_single);
        factors.ordered_rows = LineFactors<T, B>::OrderedRows::double_rows;
    }
}

/// One multiplicative sweep over the families, in order (`forward`) or in
/// reverse: z ← z + M_f⁻¹ S (r − A z) family by family, each line's thread
/// forming the residual on its own rows just before its solve (what the
/// solve reads; race-free because no block couples two lines of a family).
/// From z = 0 (`zero_start`) the first family takes r itself.
/// With the families of colored_line_set, each update is exact on its
/// family's subspace, so the sweep contracts in the A-norm, and a forward
/// sweep before and a backward one after a coarse correction make a
/// symmetric positive definite V-cycle. Where order_line_rows made a copy
/// of the rows in the sweep's precision, the families it covers read it.
/// @param[in]     a          the matrix the factors were computed from
/// @param[in]     free_dofs  #DoFs filter used for the factors
/// @param[in]     lines      node chains
/// @param[in,out] factors    from factor_lines (scratch and sweep_residual are overwritten)
/// @param[in]     r          #DoFs, zero on constrained DoFs
/// @param[in,out] z          #DoFs (ignored on entry when zero_start), must not alias r
/// @param[in]     single_values  nullptr, or a float copy of a's values: the
///                           residuals then use it, and the solves the factors'
///                           float copies (LineFactors::round_to_float); vectors
///                           and sums stay T
/// @throws InvalidInput on size mismatches or aliasing, for lines not made by
///         colored_line_set, or for float factors not made
template <typename T, int B>
void sweep_lines(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs, const LineSet& lines,
                 LineFactors<T, B>& factors, const thrust::device_vector<T>& r, thrust::device_vector<T>& z,
                 bool zero_start, bool forward, const thrust::device_vector<float>* single_values = nullptr)
{
    line_detail::require_line_sizes("sweep_lines", lines, factors, r, z);
    if (!lines.classes_uncoupled()) {
        throw InvalidInput(
            "invalid sweep_lines lines: they must come from colored_line_set (lines of one family "
            "that no block couples)");
    }
    if (&r == &z) throw InvalidInput("invalid sweep_lines arguments: r and z must be different vectors");
    if (a.rows() != static_cast<Index>(r.size()) || free_dofs.size() != r.size()) {
        throw InvalidInput(
            detail::describe("sweep_lines matrix rows", a.rows(), "must equal r.size() and free_dofs.size()"));
    }
    using Ordered = typename LineFactors<T, B>::OrderedRows;
    const std::uint8_t* free = thrust::raw_pointer_cast(free_dofs.data());
    if (single_values == nullptr) {
        line_detail::sweep_line_families(a.view(), free, lines, thrust::raw_pointer_cast(factors.inverse_pivots.data()),
                                         thrust::raw_pointer_cast(factors.couplings.data()),
                                         factors.ordered_rows == Ordered::double_rows
                                             ? thrust::raw_pointer_cast(factors.ordered_values.data())
                                             : static_cast<const T*>(nullptr),
                                         factors, r, z, zero_start, forward);
        return;
    }
    if (factors.inverse_pivots_single.size() != factors.inverse_pivots.size() ||
        factors.couplings_single.size() != factors.couplings.size()) {
        throw InvalidInput(
            detail::describe("sweep_lines factors.inverse_pivots_single.size()", factors.inverse_pivots_single.size(),
                             ("and couplings_single.size() = " + std::to_string(factors.couplings_single.size()) +
                              " must equal inverse_pivots.size() and couplings.size(): call round_to_float() first")
                                 .c_str()));
    }
    line_detail::sweep_line_families(
        a.view_with(*single_values), free, lines, thrust::raw_pointer_cast(factors.inverse_pivots_single.data()),
        thrust::raw_pointer_cast(factors.couplings_single.data()),
        factors.ordered_rows == Ordered::single_rows ? thrust::raw_pointer_cast(factors.ordered_values_single.data())
                                                     : static_cast<const float*>(nullptr),
        factors, r, z, zero_start, forward);
}

}  // namespace weft
