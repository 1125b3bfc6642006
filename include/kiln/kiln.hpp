#pragma once
// kiln: trace C++ functions over tensors into staged graphs, compile them with named weights and run
// them in a reference interpreter or a JIT tier. See README.md and ARCHITECTURE.md.
#include <kiln/compare_tiers.hpp>
#include <kiln/compile.hpp>
#include <kiln/compiled_module.hpp>
#include <kiln/debug.hpp>
#include <kiln/device.hpp>
#include <kiln/dtype.hpp>
#include <kiln/dtype_promotion.hpp>
#include <kiln/error.hpp>
#include <kiln/extension.hpp>
#include <kiln/functional.hpp>
#include <kiln/io.hpp>
#include <kiln/jit.hpp>
#include <kiln/jit_mode.hpp>
#include <kiln/layout.hpp>
#include <kiln/nn.hpp>
#include <kiln/profile.hpp>
#include <kiln/session.hpp>
#include <kiln/shape.hpp>
#include <kiln/stage.hpp>
#include <kiln/stepper.hpp>
#include <kiln/subgraph.hpp>
#include <kiln/tensor.hpp>
#include <kiln/tensor_summary.hpp>
