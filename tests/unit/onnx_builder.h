// Small ONNX models built in code with libonnx's protobuf classes, for the ONNX frontend's unit
// tests (onnx_frontend_test.cpp: the op table's first forms; onnx_zoo_ops_test.cpp: the CNN
// zoo's; onnx_newer_test.cpp: opsets 18 to 21 and the dynamo exporter's forms): a Builder of
// inputs, outputs, initializers and nodes, attribute setters, and the checks those tests share (the
// op sequence of a loaded model, a refusal's message).
#pragma once

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/driver/model_loader.h"
#include "compiler/ir/ops.h"
#include "tests/unit/test_util.h"

namespace zoc::test::onnx_builder {

namespace pb = ::onnx;

// A model built in code: inputs and outputs (-1: a symbolic dimension), initializers, nodes.
class Builder {
 public:
  explicit Builder(int64_t opset = 17) {
    m_.set_ir_version(8);
    pb::OperatorSetIdProto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m_.mutable_graph()->set_name("t");
  }
  // The IR version (8 unless set; the dynamo exporter writes 10).
  Builder& ir(int64_t version) {
    m_.set_ir_version(version);
    return *this;
  }
  Builder& input(const std::string& name, const std::vector<int64_t>& dims) {
    value(m_.mutable_graph()->add_input(), name, dims);
    return *this;
  }
  Builder& output(const std::string& name, const std::vector<int64_t>& dims) {
    value(m_.mutable_graph()->add_output(), name, dims);
    return *this;
  }
  // An output whose dims are all left symbolic: only its rank is declared.
  Builder& output(const std::string& name, int rank) {
    return output(name, std::vector<int64_t>(static_cast<size_t>(rank), -1));
  }
  Builder& init(const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& v) {
    pb::TensorProto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(pb::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return *this;
  }
  Builder& init_bool(const std::string& name, bool v) {
    pb::TensorProto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(pb::TensorProto::BOOL);
    t->add_int32_data(v ? 1 : 0);
    return *this;
  }
  // An initializer of an integer type stored in int32_data (INT8, UINT8, INT32), of `dims` ([]:
  // a scalar).
  Builder& init_int(const std::string& name, int32_t type, const std::vector<int64_t>& dims,
                    const std::vector<int32_t>& v) {
    pb::TensorProto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    for (int32_t x : v) t->add_int32_data(x);
    return *this;
  }
  // A 1-D int64 initializer, or with `scalar` a 0-D one of v's one element, or of `dims`.
  Builder& init_i64(const std::string& name, const std::vector<int64_t>& v, bool scalar = false,
                    const std::vector<int64_t>& dims = {}) {
    pb::TensorProto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(pb::TensorProto::INT64);
    if (!dims.empty()) {
      for (int64_t d : dims) t->add_dims(d);
    } else if (!scalar) {
      t->add_dims(static_cast<int64_t>(v.size()));
    }
    for (int64_t x : v) t->add_int64_data(x);
    return *this;
  }
  pb::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                      const std::vector<std::string>& out, const std::string& name = "") {
    pb::NodeProto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& s : in) n->add_input(s);
    for (const std::string& s : out) n->add_output(s);
    return *n;
  }
  std::string save(const test::TempDir& dir, const std::string& name = "m.onnx") const {
    return dir.write(name, m_.SerializeAsString());
  }

 private:
  static void value(pb::ValueInfoProto* v, const std::string& name,
                    const std::vector<int64_t>& dims) {
    v->set_name(name);
    pb::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(pb::TensorProto::FLOAT);
    t->mutable_shape();  // ONNX 1.12's checker wants a shape on every graph input and output
    for (size_t i = 0; i < dims.size(); ++i) {
      pb::TensorShapeProto::Dimension* dim = t->mutable_shape()->add_dim();
      if (dims[i] < 0) {  // symbolic: the batch "N", others each their own name
        dim->set_dim_param(i == 0 ? "N" : "d" + std::to_string(i));
      } else {
        dim->set_dim_value(dims[i]);
      }
    }
  }
  pb::ModelProto m_;
};

inline void set_ints(pb::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void set_int(pb::NodeProto& n, const std::string& name, int64_t v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INT);
  a->set_i(v);
}
inline void set_string(pb::NodeProto& n, const std::string& name, const std::string& v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::STRING);
  a->set_s(v);
}
inline void set_float(pb::NodeProto& n, const std::string& name, float v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::FLOAT);
  a->set_f(v);
}

inline std::vector<float> ramp(size_t n, float scale = 0.25f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 7) - 3);
  return v;
}

inline std::optional<LoadedModel> load(const std::string& path, Diagnostics& d) {
  return load_model_and_weights(path, d);
}

inline std::string ops_of(const ir::Graph& g) {
  std::string s;
  for (const ir::Node& n : g.nodes)
    s += std::string(s.empty() ? "" : " ") + std::string(ir::op_info(n.op).name);
  return s;
}

// Loads `b`, expects its op sequence, and runs it on `x` with the reference interpreter; `keep`,
// if given, gets the loaded model.
inline std::vector<float> run_model(const Builder& b, const std::string& ops, const ref::Tensor& x,
                                    LoadedModel* keep = nullptr) {
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  EXPECT_TRUE(m) << d.render();
  if (!m) return {};
  EXPECT_EQ(ops_of(m->graph), ops);
  auto out = ref::run(m->graph, *m->weights, x);
  EXPECT_TRUE(out.ok()) << out.error().message;
  if (keep) *keep = *m;
  return out.ok() ? (*out)[0].data : std::vector<float>{};
}

inline void expect_refused(const Builder& b, const std::string& why) {
  test::TempDir dir;
  Diagnostics d;
  EXPECT_FALSE(load(b.save(dir), d));
  EXPECT_NE(d.render().find(why), std::string::npos) << "missing: " << why << "\n" << d.render();
}

}  // namespace zoc::test::onnx_builder
