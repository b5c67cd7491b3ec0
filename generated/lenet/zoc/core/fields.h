// The convention of the runtime's field lists: a struct that generated code initializes (a call
// constant, a kernel's shape, a weight-packing spec) lists its fields once as an X-macro,
// `ZOC_FIELDS_<Struct>(X)`, one `X(type, name, default)` per field in declaration order. The
// runtime declares the struct from it (ZOC_DECLARE_FIELD), and zoc's emitter prints generated
// constants from the same list as C++20 designated initializers (`.c = 64, .h = 56, ...`,
// compiler/backend/cudnn/named_init.h), leaving out a field whose value is its default's text.
// So a field cannot be named in one place and missed in the other, and generated code reads by
// name. Macros only, no includes: the compiler, which has no CUDA, includes the lists too.
#pragma once

// Declares one field of a struct from its list.
#define ZOC_DECLARE_FIELD(type, name, dflt) type name = dflt;
