// The Python module `weft` (pybind11): load a scene (file or dict), step it
// on the OpenMP backend, read and write its state as NumPy arrays, move pins,
// read energies and step reports, write frames as weft-run does, and call the
// core's per-element functions. Reference: docs/python.md.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <weft/backend/scene_options.hpp>
#include <weft/backend/triangle_stepper.hpp>
#include <weft/backend/yarn_stepper.hpp>
#include <weft/core/error.hpp>
#include <weft/core/version.hpp>
#include <weft/element/bending_element.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/element/plate_bending_element.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/triangle_scene.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/potential/stvk.hpp>
#include <weft/strain/green_strain.hpp>
#include <weft/strain/shear.hpp>
#include <weft/strain/stretch.hpp>

#include "../examples/weft_run/frame_output.hpp"

namespace py = pybind11;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

/// Raised when a step fails after every halving (the state stays that of the
/// last successful step).
struct StepError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A (rows × cols) copy of `values` (row-major) as a NumPy array.
Array matrix_array(const std::vector<double>& values, std::size_t rows, std::size_t cols)
{
    Array out({rows, cols});
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
}

/// Checks a NumPy array's shape, naming the argument.
void require_shape(const Array& a, std::size_t rows, std::size_t cols, const std::string& name)
{
    if (a.ndim() != 2 || std::size_t(a.shape(0)) != rows || std::size_t(a.shape(1)) != cols) {
        std::ostringstream os;
        os << "invalid " << name << ": expected shape (" << rows << ", " << cols << "), got (";
        for (py::ssize_t d = 0; d < a.ndim(); ++d) os << (d ? ", " : "") << a.shape(d);
        os << ")";
        throw weft::InvalidInput(os.str());
    }
}

template <int N>
weft::Vec<double, N> vector_of(const Array& a, const std::string& name)
{
    if (a.ndim() != 1 || a.shape(0) != N)
        throw weft::InvalidInput("invalid " + name + ": expected " + std::to_string(N) + " values");
    weft::Vec<double, N> v;
    for (int i = 0; i < N; ++i) v(i) = a.data()[i];
    return v;
}

template <int R, int C>
Array eigen_array(const weft::Mat<double, R, C>& m)
{
    Array out({std::size_t(R), std::size_t(C)});
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) out.mutable_at(i, j) = m(i, j);
    return out;
}

template <int N>
Array eigen_vector(const weft::Vec<double, N>& v)
{
    Array out(py::ssize_t{N});
    for (int i = 0; i < N; ++i) out.mutable_at(i) = v(i);
    return out;
}

/// A scene loaded, built and stepped: the yarn or the triangle stepper.
class Simulation {
public:
    Simulation(const py::object& scene, const std::string& output_dir) : m_output_dir(output_dir)
    {
        const py::module_ json = py::module_::import("json");
        py::object content = scene;
        if (py::isinstance<py::dict>(scene)) {
            const std::string text = json.attr("dumps")(scene).cast<std::string>();
            m_scene = weft::parse_scene_text(text, "<dict>");
        } else {
            const std::string path = py::str(scene).cast<std::string>();
            m_scene = weft::load_scene(path);
            py::object file = py::module_::import("io").attr("open")(path, "r", py::arg("encoding") = "utf-8");
            content = json.attr("load")(file);
            file.attr("close")();
        }
        // What a checkpoint is checked against: the scene's content, keys
        // sorted, so that a file and the same content as a dict agree.
        const std::string canonical = json.attr("dumps")(content, py::arg("sort_keys") = true).cast<std::string>();
        m_fingerprint =
            weft::checkpoint_detail::fnv1a(reinterpret_cast<const unsigned char*>(canonical.data()), canonical.size());
        const auto options = weft::stepper_options<double>(m_scene);
        if (weft::is_triangle_scene(m_scene)) {
            m_triangle_scene =
                std::make_unique<weft::TriangleScene<double>>(weft::build_triangle_scene<double>(m_scene));
            m_triangle = std::make_unique<weft::TriangleStepper<double>>(
                m_triangle_scene->model, m_triangle_scene->colliders, m_triangle_scene->gravity, options);
        } else {
            m_yarn_scene = std::make_unique<weft::YarnScene<double>>(weft::build_yarn_scene<double>(m_scene));
            m_yarn = std::make_unique<weft::YarnStepper<double>>(m_yarn_scene->model, m_yarn_scene->colliders,
                                                                 m_yarn_scene->gravity, options,
                                                                 weft::eil_options<double>(m_scene));
        }
    }

    std::string kind() const { return m_yarn ? "yarn" : "triangle"; }
    bool jacobian_check() const
    {
        return m_yarn ? m_yarn->options().jacobian_check : m_triangle->options().jacobian_check;
    }
    void set_jacobian_check(bool on)
    {
        if (on)
            weft::require_full_newton("jacobian_check", m_scene.solver.newton_iterations,
                                      "it checks full Newton's matrix");
        const auto set = [on](auto& stepper) {
            auto o = stepper.options();
            o.jacobian_check = on;
            stepper.set_options(o);
        };
        if (m_yarn)
            set(*m_yarn);
        else
            set(*m_triangle);
    }
    int dofs_per_node() const { return m_yarn ? weft::yarn_node_dofs : 3; }
    std::size_t node_count() const { return state(false).size() / std::size_t(dofs_per_node()); }
    double time() const { return m_time; }
    long steps() const { return m_steps; }
    double time_step() const { return m_scene.time_step; }
    double duration() const { return m_scene.duration; }
    std::string name() const { return m_scene.name; }

    /// One step of the scene's time step; the report as a dict.
    py::dict step()
    {
        py::dict report;
        const double h = m_scene.time_step;
        const std::string failure =
            "step " + std::to_string(m_steps + 1) + " (t = " + std::to_string(m_time + h) + " s) failed: ";
        if (m_yarn) {
            weft::YarnStepReport r;
            {
                py::gil_scoped_release release;
                r = m_yarn->step(h);
            }
            if (!r.ok) throw StepError(failure + r.message);
            fill(report, r);
            report["eil_nodes"] = r.eil_nodes;
            report["detached_contacts"] = r.detached_contacts;
            report["pulled_contacts"] = r.pulled_contacts;
            report["created_contacts"] = r.created_contacts;
            if (m_yarn->collision().enabled) {
                report["contact_pairs"] = m_yarn->contact_pairs();
                report["min_contact_distance"] = m_yarn->min_contact_distance();  // inf: no pair
            }
        } else {
            weft::BackendStepReport r;
            {
                py::gil_scoped_release release;
                r = m_triangle->step(h);
            }
            if (!r.ok) throw StepError(failure + r.message);
            fill(report, r);
            if (m_triangle->collision().enabled) {
                report["contact_pairs"] = m_triangle->contact_pairs();
                report["min_contact_distance"] = m_triangle->min_contact_distance();  // inf: no pair
            }
        }
        ++m_steps;
        m_time = double(m_steps) * h;
        return report;
    }

    /// Steps until `until` (default: the scene's duration), calling
    /// callback(simulation) after every `every` steps; returns the steps taken.
    long run(const py::object& until, const py::object& callback, int every)
    {
        if (every < 1) throw weft::InvalidInput("invalid every = " + std::to_string(every) + ": must be >= 1");
        const double end = until.is_none() ? m_scene.duration : until.cast<double>();
        if (!std::isfinite(end)) throw weft::InvalidInput("invalid until: not finite");
        long taken = 0;
        // Steps whose end time lies within half a step of `end` are taken.
        while (double(m_steps + 1) * m_scene.time_step <= end + 0.5 * m_scene.time_step) {
            step();
            ++taken;
            if (!callback.is_none() && taken % every == 0) callback(py::cast(this, py::return_value_policy::reference));
        }
        return taken;
    }

    Array positions() const { return columns(0, 3); }
    void set_positions(const Array& x) { set_columns(0, 3, x, "positions"); }
    Array velocities() const { return columns(0, 3, true); }
    void set_velocities(const Array& v) { set_columns(0, 3, v, "velocities", true); }
    Array arc_lengths() const { return columns(3, 2, false, true); }
    void set_arc_lengths(const Array& s) { set_columns(3, 2, s, "arc_lengths", false, true); }
    Array arc_length_rates() const { return columns(3, 2, true, true); }

    /// Per node and yarn direction (u, v), 1 where the node is EIL on that yarn.
    py::array_t<std::uint8_t> eil() const
    {
        yarn_only("eil");
        const std::size_t n = node_count();
        py::array_t<std::uint8_t> out({n, std::size_t(2)});
        const std::vector<unsigned char>& tags = m_yarn->eil_assignment().node_eil;
        for (std::size_t i = 0; i < 2 * n; ++i) out.mutable_data()[i] = i < tags.size() ? tags[i] : 0;
        return out;
    }

    py::dict energies()
    {
        const weft::ElementEnergies<double> e = m_yarn ? m_yarn->energies() : m_triangle->energies();
        py::dict d;
        d["kinetic"] = e.kinetic;
        d["elastic"] = e.elastic;
        d["gravity"] = e.gravity;
        d["dissipation_potential"] = e.dissipation;
        return d;
    }

    /// Pinned nodes move to `targets` (#nodes × 3) over the next step.
    void set_pin_targets(const std::vector<weft::Index>& nodes, const Array& targets)
    {
        require_shape(targets, nodes.size(), 3, "targets");
        std::vector<weft::Vec3<double>> t(nodes.size());
        for (std::size_t k = 0; k < nodes.size(); ++k) t[k] = {targets.at(k, 0), targets.at(k, 1), targets.at(k, 2)};
        if (m_yarn)
            m_yarn->set_pin_targets(nodes, t, m_scene.time_step);
        else
            m_triangle->set_pin_targets(nodes, t, m_scene.time_step);
    }

    /// Writes the current state as the next frame in `directory` (relative
    /// paths resolve against output_dir), in the scene's frame formats.
    int write_frame(const std::string& directory)
    {
        std::filesystem::path dir(directory);
        if (dir.is_relative()) dir = m_output_dir / dir;
        const std::string key = dir.lexically_normal().string();
        int& count = m_frame_counts[key];
        if (m_yarn) {
            auto& out = m_yarn_frames[key];
            if (!out) out = std::make_unique<weft::examples::FrameOutput>(dir, m_scene.output, *m_yarn_scene);
            out->set_yarns(m_yarn->topology().yarns.empty() ? m_yarn_scene->model : m_yarn->topology());
            out->write(count, m_time, *m_yarn);
        } else {
            auto& out = m_triangle_frames[key];
            if (!out)
                out =
                    std::make_unique<weft::examples::TriangleFrameOutput>(dir, m_scene.output, m_triangle_scene->mesh);
            out->write(count, m_time, *m_triangle);
        }
        return count++;
    }

    /// Writes the complete state to a checkpoint file (weft/io/checkpoint.hpp):
    /// the stepper's (positions, velocities, friction anchors, contacts, EIL
    /// nodes, the warm start of the next solve) and the step count. `load`
    /// in a Simulation of the same scene continues it, step for step the
    /// same as the run that saved it. Relative paths resolve against
    /// output_dir.
    void save(const std::string& path) const
    {
        weft::CheckpointWriter out;
        out.put_value("python.fingerprint", m_fingerprint);
        out.put_string("python.scene", m_scene.name);
        out.put_value("python.steps", static_cast<std::int64_t>(m_steps));
        if (m_yarn)
            m_yarn->save_state(out);
        else
            m_triangle->save_state(out);
        out.write(resolve(path));
    }

    /// Restores a state written by `save`. Frame numbers of write_frame are
    /// not part of it.
    /// @throws InvalidInput (ValueError) naming the file and the reason: not a
    ///         checkpoint, truncated, or written for another scene
    void load(const std::string& path)
    {
        const weft::CheckpointReader in(resolve(path));
        if (!in.has("python.fingerprint"))
            in.fail("was not written by Simulation.save (a weft-run checkpoint continues with weft-run --resume)");
        if (in.get_value<std::uint64_t>("python.fingerprint") != m_fingerprint)
            in.fail("was written for scene \"" + in.get_string("python.scene") + "\", and this Simulation's scene (\"" +
                    m_scene.name + "\") has other content: a checkpoint continues only the scene it was saved from");
        const std::int64_t steps = in.get_value<std::int64_t>("python.steps");
        if (m_yarn)
            m_yarn->load_state(in);
        else
            m_triangle->load_state(in);
        m_steps = static_cast<long>(steps);
        m_time = double(m_steps) * m_scene.time_step;
    }

private:
    std::filesystem::path resolve(const std::string& path) const
    {
        std::filesystem::path p(path);
        return p.is_relative() ? m_output_dir / p : p;
    }

    template <class Report>
    static void fill(py::dict& d, const Report& r)
    {
        d["ok"] = r.ok;
        d["substeps"] = r.substeps;
        d["halvings"] = r.halvings;
        d["newton_iterations"] = r.newton_iterations;
        d["pcg_iterations"] = r.pcg_iterations;
        d["line_search_cuts"] = r.line_search_cuts;
        d["max_speed"] = r.max_speed;
        d["newton_residual"] = r.newton_residual;
        d["pcg_residual"] = r.pcg_residual;
        py::list attempts;  // full Newton: every attempt of the step (weft-run's --newton-trace)
        for (const weft::NewtonAttempt& a : r.attempts) {
            py::dict t;
            t["h"] = a.h;
            t["halvings"] = a.halvings;
            t["iterations"] = a.iterations;
            t["converged"] = a.converged;
            t["accepted"] = a.accepted;
            t["residuals"] = a.residuals;
            t["fractions"] = a.fractions;
            t["pcg"] = a.pcg;
            t["message"] = a.message;
            attempts.append(t);
        }
        d["newton_attempts"] = attempts;
        py::list checks;  // jacobian_check: one per Newton solve (weft-run's --jacobian-check)
        for (const weft::JacobianCheck& c : r.jacobian_checks) {
            py::dict t;
            t["attempt"] = c.attempt;
            t["iteration"] = c.iteration;
            t["exact_hessians"] = c.exact_hessians;
            t["update_norm"] = c.update_norm;
            t["mismatch"] = std::vector<double>{c.mismatch[0], c.mismatch[1]};
            t["worst_node"] = std::vector<long>{c.worst_node[0], c.worst_node[1]};
            t["worst_component"] = std::vector<int>{c.worst_component[0], c.worst_component[1]};
            t["residual_norm"] = c.residual_norm;
            t["top8_share"] = c.top_share;
            t["largest_node"] = c.largest_node;
            t["largest_component"] = c.largest_component;
            py::list terms;  // per kind of element (weft-run's --jacobian-terms)
            for (const weft::JacobianCheck::Term& term : c.terms) {
                py::dict u;
                u["name"] = term.name;
                u["product"] = term.product;
                u["mismatch"] = std::vector<double>{term.mismatch[0], term.mismatch[1]};
                u["worst_node"] = std::vector<long>{term.worst_node[0], term.worst_node[1]};
                u["worst_component"] = std::vector<int>{term.worst_component[0], term.worst_component[1]};
                u["worst_element"] = std::vector<long>{term.worst_element[0], term.worst_element[1]};
                u["element_mismatch"] = std::vector<double>{term.element_mismatch[0], term.element_mismatch[1]};
                u["element_nodes"] = std::vector<std::vector<long>>{term.element_nodes[0], term.element_nodes[1]};
                terms.append(u);
            }
            t["terms"] = terms;
            checks.append(t);
        }
        d["jacobian_checks"] = checks;
    }

    void yarn_only(const char* what) const
    {
        if (!m_yarn) throw weft::InvalidInput(std::string(what) + ": a triangle scene has no arc lengths or EIL nodes");
    }

    std::vector<double> state(bool velocity) const
    {
        if (m_yarn) return weft::to_host(velocity ? m_yarn->velocities() : m_yarn->positions());
        return weft::to_host(velocity ? m_triangle->velocities() : m_triangle->positions());
    }

    Array columns(int first, int count, bool velocity = false, bool arc = false) const
    {
        if (arc) yarn_only("arc lengths");
        const std::vector<double> x = state(velocity);
        const std::size_t b = std::size_t(dofs_per_node()), n = x.size() / b;
        std::vector<double> out(n * std::size_t(count));
        for (std::size_t i = 0; i < n; ++i)
            for (int c = 0; c < count; ++c) out[i * count + c] = x[i * b + std::size_t(first + c)];
        return matrix_array(out, n, std::size_t(count));
    }

    void set_columns(int first, int count, const Array& a, const std::string& name, bool velocity = false,
                     bool arc = false)
    {
        if (arc) yarn_only(name.c_str());
        std::vector<double> x = state(velocity);
        const std::size_t b = std::size_t(dofs_per_node()), n = x.size() / b;
        require_shape(a, n, std::size_t(count), name);
        for (std::size_t i = 0; i < n; ++i)
            for (int c = 0; c < count; ++c) x[i * b + std::size_t(first + c)] = a.at(i, c);
        if (m_yarn)
            velocity ? m_yarn->set_velocities(x) : m_yarn->set_positions(x);
        else
            velocity ? m_triangle->set_velocities(x) : m_triangle->set_positions(x);
    }

    weft::SceneDescription m_scene;
    std::filesystem::path m_output_dir;
    std::unique_ptr<weft::YarnScene<double>> m_yarn_scene;
    std::unique_ptr<weft::YarnStepper<double>> m_yarn;
    std::unique_ptr<weft::TriangleScene<double>> m_triangle_scene;
    std::unique_ptr<weft::TriangleStepper<double>> m_triangle;
    double m_time = 0;
    long m_steps = 0;
    std::uint64_t m_fingerprint = 0;  ///< of the scene's content (see the constructor)
    std::map<std::string, int> m_frame_counts;
    std::map<std::string, std::unique_ptr<weft::examples::FrameOutput>> m_yarn_frames;
    std::map<std::string, std::unique_ptr<weft::examples::TriangleFrameOutput>> m_triangle_frames;
};

/// What every strain-based element reports: size, energy, dissipation
/// potential, forces and their exact Jacobians (elastic in q, dissipative in v).
template <int N, int M, class Density>
py::dict strain_element(const weft::StrainEval<double, N, M>& e, const Density& elastic, const Density& dissipative)
{
    py::dict d;
    d["size"] = e.size;
    d["energy"] = weft::elastic_energy(e, elastic);
    d["elastic_force"] = eigen_vector<N>(weft::elastic_force(e, elastic));
    d["elastic_force_jacobian"] = eigen_array<N, N>(weft::elastic_force_jacobian(e, elastic));
    d["dissipation_potential"] = weft::dissipation_potential(e, dissipative);
    d["dissipative_force"] = eigen_vector<N>(weft::dissipative_force(e, dissipative));
    d["dissipative_force_jacobian_velocities"] =
        eigen_array<N, N>(weft::dissipative_force_jacobian(e, dissipative, weft::DiffWrt::velocities));
    return d;
}

/// A strain-based yarn element with one strain (stretch, shear) and the
/// quadratic densities k_e ε²/2, k_d ε̇²/2 per unit Ω.
template <int N>
py::dict scalar_strain_element(const weft::StrainEval<double, N, 1>& e, double stiffness, double damping)
{
    py::dict d =
        strain_element(e, weft::QuadraticDensity<double, 1>{stiffness}, weft::QuadraticDensity<double, 1>{damping});
    d["strain"] = e.strain(0);
    d["strain_gradient"] = eigen_vector<N>(e.gradient.col(0));
    d["strain_rate"] = e.rate(0);
    return d;
}

/// The yarn segment's stretch (2017 Eq. 12–14), q = [x0, s0, x1, s1].
py::dict yarn_segment(const Array& q, const Array& v, double stiffness, double damping)
{
    return scalar_strain_element(weft::stretch_strain<double>(vector_of<8>(q, "q"), vector_of<8>(v, "v")), stiffness,
                                 damping);
}

/// The shear of a crossing (2017 Eq. 22–23), q = [x0, s0, x1, s1, x2, s2].
py::dict yarn_shear(const Array& q, const Array& v, double rest_spacing, double stiffness, double damping)
{
    return scalar_strain_element(weft::shear_strain<double>(vector_of<12>(q, "q"), vector_of<12>(v, "v"), rest_spacing),
                                 stiffness, damping);
}

/// The blended bending element (2017 Sec. 5.2), q = [x_prev, s_prev, x0, s0,
/// x_next, s_next], quadratic in the bending strain with stiffness k_b and
/// damping k_d; exact (unprojected) Jacobians.
py::dict yarn_bend(const Array& q, const Array& v, double stiffness, double damping)
{
    const auto r = weft::evaluate_bending<double>(vector_of<12>(q, "q"), vector_of<12>(v, "v"),
                                                  weft::quadratic_bending_densities<double>(stiffness, damping),
                                                  weft::PsdProjection::off);
    py::dict d;
    d["angle"] = r.angle;
    d["energy"] = r.energy;
    d["elastic_force"] = eigen_vector<12>(r.elastic_force);
    d["elastic_force_jacobian"] = eigen_array<12, 12>(r.elastic_force_jacobian);
    d["dissipation_potential"] = r.dissipation_potential;
    d["dissipative_force"] = eigen_vector<12>(r.dissipative_force);
    d["dissipative_force_jacobian_velocities"] = eigen_array<12, 12>(r.dissipative_force_jacobian_velocities);
    return d;
}

/// A triangle's Green strain (2018 Sec. 4) in Voigt order, with the StVK
/// membrane (λ, μ per unit area) and its strain-rate damping (λ_d, μ_d).
py::dict triangle_membrane(const Array& rest_uv, const Array& x, const Array& v, double lambda, double mu,
                           double lambda_d, double mu_d)
{
    require_shape(rest_uv, 3, 2, "rest_uv");
    const auto rest =
        weft::make_triangle_rest<double>({rest_uv.at(0, 0), rest_uv.at(0, 1)}, {rest_uv.at(1, 0), rest_uv.at(1, 1)},
                                         {rest_uv.at(2, 0), rest_uv.at(2, 1)});
    const auto e = weft::green_strain<double>(rest, vector_of<9>(x, "x"), vector_of<9>(v, "v"));
    py::dict d = strain_element(e, weft::StVKDensity<double>{lambda, mu}, weft::StVKDensity<double>{lambda_d, mu_d});
    d["strain"] = eigen_vector<3>(e.strain);
    d["strain_gradient"] = eigen_array<9, 3>(e.gradient);
    d["strain_rate"] = eigen_vector<3>(e.rate);
    d["area"] = e.size;
    return d;
}

py::dict plate_bending(const Array& rest_points, const Array& x, const Array& v, double rigidity, double poisson,
                       double damping)
{
    require_shape(rest_points, 6, 2, "rest_points");
    weft::Vec2<double> points[weft::curvature_patch_nodes];
    for (int i = 0; i < weft::curvature_patch_nodes; ++i) points[i] = {rest_points.at(i, 0), rest_points.at(i, 1)};
    const auto rest = weft::narrow_shell_curvature_rest<6>(weft::make_patch_curvature_rest<double>(points));
    const auto e = weft::shell_curvature_strain<double, 6>(rest, vector_of<18>(x, "x"), vector_of<18>(v, "v"));
    py::dict d = strain_element(e, weft::plate_bending_density(rigidity, poisson),
                                weft::plate_bending_density(damping, poisson));
    d["strain"] = eigen_vector<3>(e.strain);
    d["strain_gradient"] = eigen_array<18, 3>(e.gradient);
    d["strain_rate"] = eigen_vector<3>(e.rate);
    d["area"] = e.size;
    return d;
}

}  // namespace

PYBIND11_MODULE(weft, m)
{
    m.doc() = "weft: yarn-level and triangle cloth with strain-rate damping (docs/python.md)";
    m.attr("__version__") = WEFT_VERSION_STRING;
    py::register_exception<weft::InvalidInput>(m, "InvalidInput", PyExc_ValueError);
    py::register_exception<StepError>(m, "StepError", PyExc_RuntimeError);

    py::class_<Simulation>(m, "Simulation",
                           "A scene (a JSON file's path, or the same content as a dict) built and stepped on the "
                           "CPU threads (OpenMP)")
        .def(py::init<const py::object&, const std::string&>(), py::arg("scene"), py::arg("output_dir") = ".")
        .def_property_readonly("kind", &Simulation::kind, "\"yarn\" or \"triangle\"")
        .def_property("jacobian_check", &Simulation::jacobian_check, &Simulation::set_jacobian_check,
                      "full Newton: check the matrix against finite differences of the residual at every solve; "
                      "step() reports the rows as jacobian_checks (weft-run --jacobian-check)")
        .def_property_readonly("name", &Simulation::name)
        .def_property_readonly("node_count", &Simulation::node_count)
        .def_property_readonly("time", &Simulation::time, "simulated time (s)")
        .def_property_readonly("steps", &Simulation::steps, "steps taken")
        .def_property_readonly("time_step", &Simulation::time_step)
        .def_property_readonly("duration", &Simulation::duration)
        .def("step", &Simulation::step, "one step of time_step; returns the step report (dict); raises StepError")
        .def("run", &Simulation::run, py::arg("until") = py::none(), py::arg("callback") = py::none(),
             py::arg("every") = 1, "steps to `until` (default: duration), callback(sim) every `every` steps")
        .def_property("positions", &Simulation::positions, &Simulation::set_positions, "(nodes, 3) array, m")
        .def_property("velocities", &Simulation::velocities, &Simulation::set_velocities, "(nodes, 3) array, m/s")
        .def_property("arc_lengths", &Simulation::arc_lengths, &Simulation::set_arc_lengths,
                      "(nodes, 2) array: u, v (yarn scenes)")
        .def_property_readonly("arc_length_rates", &Simulation::arc_length_rates, "(nodes, 2) array (yarn scenes)")
        .def_property_readonly("eil", &Simulation::eil, "(nodes, 2) uint8: EIL on the u-, v-yarn (yarn scenes)")
        .def("energies", &Simulation::energies, "kinetic, elastic, gravity and dissipation_potential (J)")
        .def("set_pin_targets", &Simulation::set_pin_targets, py::arg("nodes"), py::arg("targets"),
             "pinned nodes reach targets (len(nodes), 3) at the end of the next step")
        .def("write_frame", &Simulation::write_frame, py::arg("directory"),
             "writes the state as the next frame (the scene's output formats); returns its number")
        .def("save", &Simulation::save, py::arg("path"),
             "writes the complete state (a checkpoint file); load() in a Simulation of the same scene continues it")
        .def("load", &Simulation::load, py::arg("path"),
             "restores a state written by save(); raises InvalidInput for a file of another scene");

    m.def("yarn_segment", &yarn_segment, py::arg("q"), py::arg("v"), py::arg("stiffness"), py::arg("damping") = 0.0,
          "stretch of a segment q = [x0, s0, x1, s1]: strain, forces and Jacobians (2017 Eq. 12-14)");
    m.def(
        "yarn_shear", &yarn_shear, py::arg("q"), py::arg("v"), py::arg("rest_spacing"), py::arg("stiffness"),
        py::arg("damping") = 0.0,
        "shear at a crossing, q = [x0, s0, x1, s1, x2, s2]: strain phi - pi/2, forces and Jacobians (2017 Eq. 22-23)");
    m.def("yarn_bend", &yarn_bend, py::arg("q"), py::arg("v"), py::arg("stiffness"), py::arg("damping") = 0.0,
          "blended bending element, q = [x_prev, s_prev, x0, s0, x_next, s_next]: angle, forces and exact "
          "Jacobians (2017 Sec. 5.2)");
    m.def("triangle_membrane", &triangle_membrane, py::arg("rest_uv"), py::arg("x"), py::arg("v"), py::arg("lam"),
          py::arg("mu"), py::arg("lam_d") = 0.0, py::arg("mu_d") = 0.0,
          "Green strain and StVK membrane of a triangle: strain, forces and Jacobians (2018 Sec. 4)");
    m.def("plate_bending", &plate_bending, py::arg("rest_points"), py::arg("x"), py::arg("v"), py::arg("D"),
          py::arg("nu"), py::arg("D_d") = 0.0,
          "Kirchhoff plate bending of a triangle on its six-vertex patch (corners first, then the vertices across "
          "its edges): curvature change b - b_rest, forces and Jacobians (docs/triangles.md)");
}
