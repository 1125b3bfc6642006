#pragma once
#include <kiln/dtype.hpp>
#include <string>

namespace kiln {

// A double with up to `digits` significant digits and no trailing zeros: "0.5", "4", "1e-05",
// "nan", "-inf".
std::string float_text(double value, int digits);
// How printed tensors and summaries spell one value of `dtype`, after numpy: floats with the fewest
// digits (at most 8) that read back as the same value of the dtype, integers without decimals,
// bool as True/False.
std::string value_text(double value, DType dtype);

} // namespace kiln
