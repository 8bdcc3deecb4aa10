// onnx_weights: extract every fp32 initializer of one or more ONNX models into one raw file.
//
//   onnx_weights OUT.bin MODEL.onnx [MODEL.onnx ...]
//
// Writes the weights as consecutive little-endian fp32 values, model after model, initializer after
// initializer, in file order, and prints how many it wrote. Only the protobuf wire format is
// needed, so this reads it directly rather than depending on protobuf or onnx:
//   ModelProto     field 7  graph        (message)
//   GraphProto     field 5  initializer  (repeated TensorProto)
//                  field 1  node         (repeated NodeProto)
//   NodeProto      field 4  op_type; a "Constant" node holds its tensor in
//                  field 5  attribute    (AttributeProto, field 5 t: TensorProto)
//   TensorProto field 1  dims (int64, packed or not), field 2 data_type (1 = FLOAT),
//               field 4  float_data (packed or not), field 9 raw_data (little-endian bytes),
//               field 14 data_location (1 = EXTERNAL: the data is in another file; rejected).
// Models exported by paddle2onnx (the OCR models used as "real" data) keep their weights in
// Constant nodes rather than initializers, so both places are read, in file order.
// Every read is bounds-checked; a malformed file is reported, not trusted.

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

static_assert(std::endian::native == std::endian::little,
              "raw_data and the output file are little-endian; add byte swapping for this host");

constexpr int kWireVarint = 0;
constexpr int kWireFixed64 = 1;
constexpr int kWireLen = 2;
constexpr int kWireFixed32 = 5;

constexpr uint64_t kModelGraph = 7;
constexpr uint64_t kGraphNode = 1;
constexpr uint64_t kGraphInitializer = 5;
constexpr uint64_t kNodeOpType = 4;
constexpr uint64_t kNodeAttribute = 5;
constexpr uint64_t kAttributeTensor = 5;
constexpr uint64_t kTensorDims = 1;
constexpr uint64_t kTensorDataType = 2;
constexpr uint64_t kTensorFloatData = 4;
constexpr uint64_t kTensorRawData = 9;
constexpr uint64_t kTensorDataLocation = 14;
constexpr uint64_t kDataTypeFloat = 1;
constexpr uint64_t kDataLocationExternal = 1;

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A cursor over one protobuf message; every read checks the remaining length.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : rest_(bytes) {}
  bool done() const { return rest_.empty(); }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (rest_.empty()) throw ParseError("truncated varint");
      uint8_t byte = rest_[0];
      rest_ = rest_.subspan(1);
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    throw ParseError("varint longer than 10 bytes");
  }

  std::span<const uint8_t> bytes(uint64_t n) {
    if (n > rest_.size()) throw ParseError("field runs past the end of its message");
    auto out = rest_.first(n);
    rest_ = rest_.subspan(n);
    return out;
  }

  // Skips the value of a field we do not need.
  void skip(int wire_type) {
    switch (wire_type) {
      case kWireVarint:
        varint();
        return;
      case kWireFixed64:
        bytes(8);
        return;
      case kWireLen:
        bytes(varint());
        return;
      case kWireFixed32:
        bytes(4);
        return;
      default:
        throw ParseError("unsupported wire type " + std::to_string(wire_type));
    }
  }

 private:
  std::span<const uint8_t> rest_;
};

struct Field {
  uint64_t number;
  int wire_type;
};

Field next_field(Reader& r) {
  uint64_t key = r.varint();
  return {key >> 3, int(key & 7)};
}

float float_from_le(std::span<const uint8_t> four) {
  float f;
  std::memcpy(&f, four.data(), sizeof f);
  return f;
}

void append_floats_le(std::span<const uint8_t> bytes, std::vector<float>& out) {
  if (bytes.size() % 4) throw ParseError("float payload is not a multiple of 4 bytes");
  for (size_t i = 0; i < bytes.size(); i += 4) out.push_back(float_from_le(bytes.subspan(i, 4)));
}

struct Tensor {
  uint64_t data_type = 0;
  bool external = false;
  std::vector<int64_t> dims;
  std::vector<float> float_data;
  std::span<const uint8_t> raw_data;  // points into the model file
};

Tensor parse_tensor(std::span<const uint8_t> msg) {
  Tensor t;
  Reader r(msg);
  while (!r.done()) {
    Field f = next_field(r);
    if (f.number == kTensorDims && f.wire_type == kWireVarint) {
      t.dims.push_back(int64_t(r.varint()));
    } else if (f.number == kTensorDims && f.wire_type == kWireLen) {
      Reader packed(r.bytes(r.varint()));
      while (!packed.done()) t.dims.push_back(int64_t(packed.varint()));
    } else if (f.number == kTensorDataType && f.wire_type == kWireVarint) {
      t.data_type = r.varint();
    } else if (f.number == kTensorFloatData && f.wire_type == kWireFixed32) {
      t.float_data.push_back(float_from_le(r.bytes(4)));
    } else if (f.number == kTensorFloatData && f.wire_type == kWireLen) {
      append_floats_le(r.bytes(r.varint()), t.float_data);
    } else if (f.number == kTensorRawData && f.wire_type == kWireLen) {
      t.raw_data = r.bytes(r.varint());
    } else if (f.number == kTensorDataLocation && f.wire_type == kWireVarint) {
      t.external = r.varint() == kDataLocationExternal;
    } else {
      r.skip(f.wire_type);
    }
  }
  return t;
}

uint64_t element_count(const Tensor& t) {
  uint64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0) throw ParseError("negative dimension");
    n *= uint64_t(d);
  }
  return n;
}

// Appends the values of one tensor if it is FLOAT; returns whether it was.
bool take_tensor(std::span<const uint8_t> msg, std::vector<float>& out) {
  Tensor t = parse_tensor(msg);
  if (t.data_type != kDataTypeFloat) return false;
  if (t.external) throw ParseError("tensor data stored outside the model file");
  size_t before = out.size();
  out.insert(out.end(), t.float_data.begin(), t.float_data.end());
  append_floats_le(t.raw_data, out);
  if (out.size() - before != element_count(t))
    throw ParseError("tensor holds " + std::to_string(out.size() - before) +
                     " values but its dims say " + std::to_string(element_count(t)));
  return true;
}

// The tensors held by a Constant node's attributes; nothing for any other node.
std::vector<std::span<const uint8_t>> constant_tensors(std::span<const uint8_t> node) {
  std::vector<std::span<const uint8_t>> tensors;
  bool constant = false;
  Reader r(node);
  while (!r.done()) {
    Field f = next_field(r);
    if (f.number == kNodeOpType && f.wire_type == kWireLen) {
      auto op = r.bytes(r.varint());
      constant = std::string(op.begin(), op.end()) == "Constant";
    } else if (f.number == kNodeAttribute && f.wire_type == kWireLen) {
      Reader attr(r.bytes(r.varint()));
      while (!attr.done()) {
        Field a = next_field(attr);
        if (a.number == kAttributeTensor && a.wire_type == kWireLen)
          tensors.push_back(attr.bytes(attr.varint()));
        else
          attr.skip(a.wire_type);
      }
    } else {
      r.skip(f.wire_type);
    }
  }
  if (!constant) tensors.clear();
  return tensors;
}

// Appends the FLOAT initializers and Constant-node tensors of one graph; returns how many
// tensors were kept.
size_t parse_graph(std::span<const uint8_t> msg, std::vector<float>& out) {
  size_t kept = 0;
  Reader r(msg);
  while (!r.done()) {
    Field f = next_field(r);
    if (f.number == kGraphInitializer && f.wire_type == kWireLen) {
      kept += take_tensor(r.bytes(r.varint()), out);
    } else if (f.number == kGraphNode && f.wire_type == kWireLen) {
      for (auto tensor : constant_tensors(r.bytes(r.varint()))) kept += take_tensor(tensor, out);
    } else {
      r.skip(f.wire_type);
    }
  }
  return kept;
}

std::vector<uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot open ") + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t parse_model(const char* path, std::vector<float>& out) {
  std::vector<uint8_t> file = read_file(path);
  Reader r(file);
  size_t kept = 0;
  while (!r.done()) {
    Field f = next_field(r);
    if (f.number == kModelGraph && f.wire_type == kWireLen)
      kept += parse_graph(r.bytes(r.varint()), out);
    else
      r.skip(f.wire_type);
  }
  return kept;
}

void write_file(const char* path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(values.data()),
            std::streamsize(values.size() * sizeof(float)));
  if (!out) throw std::runtime_error(std::string("cannot write ") + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.bin MODEL.onnx [MODEL.onnx ...]\n", argv[0]);
    return 2;
  }
  std::vector<float> weights;
  for (int i = 2; i < argc; ++i) {
    size_t before = weights.size();
    try {
      size_t tensors = parse_model(argv[i], weights);
      std::printf("%s: %zu fp32 tensors, %zu weights\n", argv[i], tensors, weights.size() - before);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", argv[i], e.what());
      return 1;
    }
  }
  try {
    write_file(argv[1], weights);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::printf("total: %zu fp32 weights\n", weights.size());
  return 0;
}
