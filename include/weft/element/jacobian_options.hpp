#pragma once
/// @file jacobian_options.hpp
/// Named arguments of the force Jacobians (ipc-toolkit vocabulary).

namespace weft {

/// Which generalized coordinates a force Jacobian differentiates against.
enum class DiffWrt { positions, velocities };

/// Clamp the negative stress eigenvalues in ∂f_d/∂q (2018 Sec. 3.4).
enum class StressClamp { off, on };

/// Project a local stiffness matrix onto the PSD cone: `on` sets its negative
/// eigenvalues to zero, `absolute` to their absolute values
/// (core/psd.hpp, `project_to_psd`).
enum class PsdProjection { off, on, absolute };

}  // namespace weft
