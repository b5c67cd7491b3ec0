// The IR verifier: structural invariants every stage must preserve.
//
// Run after the frontend and (with --verify-each) after every pass, it catches a broken graph
// where it was broken instead of as a wrong number three stages later.
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc::ir {

struct VerifyOptions {
  bool require_types = true;  // every value has a TensorType (after shape inference)
};

// Whether an attribute value lies in its op-table range (frontends that take numbers from
// model files check them before shape inference divides by them).
bool attr_in_range(const AttrSpec& spec, const AttrValue& value);
// That range in words: "between 1 and 4096" (whole numbers for integer, pair and boolean
// attributes: {:g} printed 1048576 as 1.04858e+06), "between -1e+30 and 1e+30" for floats.
std::string attr_range_text(const AttrSpec& spec);

// Reports every violation found; returns false if there was any. A lowered graph (one with a
// Graph::target) also gets verify_lowering's checks.
bool verify(const Graph& graph, Diagnostics& diags, const VerifyOptions& options = {});

// What lower-to-target promises (lowering.h): every node has a runtime layer that supports the
// layouts and dtypes it reads and writes; every value a storage, in its layer's stream, with an
// arena slot that holds its stored channels and that no value live at the same time shares;
// each side branch runs once and is joined once; weights lie inside the aligned buffer.
bool verify_lowering(const Graph& graph, Diagnostics& diags);

}  // namespace zoc::ir
