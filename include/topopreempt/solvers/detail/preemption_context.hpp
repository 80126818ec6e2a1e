// SPDX-License-Identifier: MIT
#pragma once
/// @file preemption_context.hpp
/// What every solver shares: eligibility, topology tiers, candidate target domains, a cheap
/// scan of each domain with a fractional lower bound, an exact feasibility oracle, and the
/// assembly of the final plan with its explanation. Solvers differ only in how they choose
/// victims inside one target domain (`DomainSearch`).
///
/// Split by stage: `domain_problem.hpp` and `search_bounds.hpp` (what a decision works on),
/// `context_core.hpp` (the context), `context_scan.hpp`, `context_problem.hpp` and
/// `context_plan.hpp` (its stages) and `solve_driver.hpp` (the driver, `solve_with`).

#include "topopreempt/solvers/detail/context_core.hpp"
#include "topopreempt/solvers/detail/context_plan.hpp"
#include "topopreempt/solvers/detail/context_problem.hpp"
#include "topopreempt/solvers/detail/context_scan.hpp"
#include "topopreempt/solvers/detail/solve_driver.hpp"
