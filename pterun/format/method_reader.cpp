// Decodes one ExecutionPlan into a MethodDesc, checking every index, size
// and byte range it hands on (docs/format.md: "Tensors", "Memory planning",
// "Execution" and "Checks beyond ExecuTorch's runtime").

#include <algorithm>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/format/program_data.h"
#include "pterun/format/program_desc.h"

namespace pterun::format {
namespace {

constexpr size_t kMaxRank = 16;

template <typename T>
size_t vec_size(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

std::string fb_text(const flatbuffers::String* s, std::string_view what) {
  return read_text(s, ErrorCode::InvalidProgram, what);
}

class MethodReader {
 public:
  MethodReader(const pterun_fb::ExecutionPlan& plan, size_t plan_index,
               const pterun_fb::Program& program, const ProgramData& data)
      : plan_(plan), program_(program), data_(data) {
    PTERUN_CHECK(plan.name() != nullptr, ErrorCode::InvalidProgram, "method ", plan_index,
                 ": has no name");
    desc_.name = fb_text(plan.name(), str_cat("method ", plan_index, ": name"));
    where_ = str_cat("method '", printable(desc_.name), "'");
  }

  MethodDesc read() {
    read_buffers();
    read_values();
    read_io();
    read_operators();
    read_delegates();
    read_chains();
    if (const auto* meta = plan_.container_meta_type()) {
      desc_.input_spec = fb_text(meta->encoded_inp_str(), where_ + ": input spec");
      desc_.output_spec = fb_text(meta->encoded_out_str(), where_ + ": output spec");
    }
    return std::move(desc_);
  }

 private:
  void read_buffers() {
    const auto* sizes = plan_.non_const_buffer_sizes();
    check_aligned(sizes, where_ + ": non_const_buffer_sizes");
    for (size_t i = 1; i < vec_size(sizes); ++i) {
      int64_t s = sizes->Get(static_cast<flatbuffers::uoffset_t>(i));
      PTERUN_CHECK(s >= 0, ErrorCode::InvalidProgram, where_, ": planned buffer ", i,
                   " has negative size ", s);
      desc_.buffer_sizes.push_back(static_cast<uint64_t>(s));
    }
    desc_.buffer_devices.resize(desc_.buffer_sizes.size());
    if (const auto* devices = plan_.non_const_buffer_device()) {
      for (const auto* d : *devices) {
        PTERUN_CHECK(d != nullptr, ErrorCode::InvalidProgram, where_, ": missing buffer device");
        int idx = d->buffer_idx();
        PTERUN_CHECK(idx >= 1 && static_cast<size_t>(idx) <= desc_.buffer_sizes.size(),
                     ErrorCode::InvalidProgram, where_, ": buffer device entry names buffer ", idx,
                     ", not one of 1..", desc_.buffer_sizes.size());
        desc_.buffer_devices[idx - 1] =
            device_of(d->device_type(), d->device_index(), str_cat(where_, ", buffer ", idx));
      }
    }
  }

  BufferDevice device_of(pterun_fb::DeviceType type, int8_t index, const std::string& what) {
    PTERUN_CHECK(type == pterun_fb::DeviceType_CPU || type == pterun_fb::DeviceType_CUDA,
                 ErrorCode::InvalidProgram, what, ": unknown device type ", int{type});
    PTERUN_CHECK(index >= 0, ErrorCode::InvalidProgram, what, ": negative device index ",
                 int{index});
    return {type == pterun_fb::DeviceType_CPU ? DeviceType::CPU : DeviceType::CUDA, index};
  }

  void read_values() {
    const auto* values = plan_.values();
    PTERUN_CHECK(values != nullptr, ErrorCode::InvalidProgram, where_, ": has no value table");
    desc_.values.reserve(values->size());
    for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i) {
      const auto* v = values->Get(i);
      std::string what = str_cat(where_, ", value ", i);
      PTERUN_CHECK(v != nullptr, ErrorCode::InvalidProgram, what, ": missing");
      desc_.values.push_back(read_value(*v, i, what));
    }
    // IntList items may name any Int value, earlier or later (sizes are read
    // when used), and nothing else (docs/format.md, "Value kinds").
    for (size_t i = 0; i < desc_.values.size(); ++i) {
      const ValueDesc& v = desc_.values[i];
      if (v.kind != ValueKind::IntList) continue;
      for (int64_t item : v.items) {
        PTERUN_CHECK(item >= 0 && static_cast<size_t>(item) < desc_.values.size() &&
                         desc_.values[item].kind == ValueKind::Int,
                     ErrorCode::InvalidProgram, where_, ", value ", i, ": IntList item ", item,
                     " is not an Int value");
      }
    }
  }

  template <typename T>
  const T* member(const pterun_fb::EValue& v, const std::string& what) {
    const T* t = v.val_as<T>();
    PTERUN_CHECK(t != nullptr, ErrorCode::InvalidProgram, what, ": value table is missing");
    return t;
  }

  ValueDesc read_value(const pterun_fb::EValue& v, size_t index, const std::string& what) {
    ValueDesc out;
    switch (v.val_type()) {
      case pterun_fb::KernelTypes_Null: out.kind = ValueKind::None; break;
      case pterun_fb::KernelTypes_Int:
        out.kind = ValueKind::Int;
        out.int_value = member<pterun_fb::Int>(v, what)->int_val();
        break;
      case pterun_fb::KernelTypes_Bool:
        out.kind = ValueKind::Bool;
        out.bool_value = member<pterun_fb::Bool>(v, what)->bool_val();
        break;
      case pterun_fb::KernelTypes_Double:
        out.kind = ValueKind::Double;
        out.double_value = member<pterun_fb::Double>(v, what)->double_val();
        break;
      case pterun_fb::KernelTypes_String: {
        out.kind = ValueKind::String;
        const auto* s = member<pterun_fb::String>(v, what)->string_val();
        PTERUN_CHECK(s != nullptr, ErrorCode::InvalidProgram, what, ": String has no text");
        out.string_value = fb_text(s, what + ": String");
        break;
      }
      case pterun_fb::KernelTypes_Tensor:
        out.kind = ValueKind::Tensor;
        out.tensor = std::make_shared<const TensorDesc>(
            read_tensor(*member<pterun_fb::Tensor>(v, what), what));
        break;
      case pterun_fb::KernelTypes_IntList: {
        out.kind = ValueKind::IntList;
        const auto* items = member<pterun_fb::IntList>(v, what)->items();
        PTERUN_CHECK(items != nullptr, ErrorCode::InvalidProgram, what, ": IntList has no items");
        check_aligned(items, what);
        out.items.assign(items->begin(), items->end());
        break;
      }
      case pterun_fb::KernelTypes_DoubleList: {
        out.kind = ValueKind::DoubleList;
        const auto* items = member<pterun_fb::DoubleList>(v, what)->items();
        PTERUN_CHECK(items != nullptr, ErrorCode::InvalidProgram, what,
                     ": DoubleList has no items");
        check_aligned(items, what);
        out.doubles.assign(items->begin(), items->end());
        break;
      }
      case pterun_fb::KernelTypes_BoolList: {
        out.kind = ValueKind::BoolList;
        const auto* items = member<pterun_fb::BoolList>(v, what)->items();
        PTERUN_CHECK(items != nullptr, ErrorCode::InvalidProgram, what, ": BoolList has no items");
        for (auto b : *items) out.bools.push_back(b ? 1 : 0);
        break;
      }
      case pterun_fb::KernelTypes_TensorList:
      case pterun_fb::KernelTypes_OptionalTensorList: {
        bool optional = v.val_type() == pterun_fb::KernelTypes_OptionalTensorList;
        out.kind = optional ? ValueKind::OptionalTensorList : ValueKind::TensorList;
        const auto* items = optional ? member<pterun_fb::OptionalTensorList>(v, what)->items()
                                     : member<pterun_fb::TensorList>(v, what)->items();
        PTERUN_CHECK(items != nullptr, ErrorCode::InvalidProgram, what, ": ",
                     value_kind_name(out.kind), " has no items");
        for (int32_t item : *items) {
          // Members precede the list: an item must be an earlier value, so a list
          // never refers to a value not built yet (docs/format.md, "Value kinds").
          bool none = optional && (item == -1 || (item >= 0 && static_cast<size_t>(item) < index &&
                                                  desc_.values[item].kind == ValueKind::None));
          PTERUN_CHECK(none || (item >= 0 && static_cast<size_t>(item) < index &&
                                desc_.values[item].kind == ValueKind::Tensor),
                       ErrorCode::InvalidProgram, what, ": ", value_kind_name(out.kind), " item ",
                       item, " is not an earlier Tensor value");
          out.items.push_back(none ? -1 : item);
        }
        break;
      }
      default:
        throw_error(ErrorCode::InvalidProgram,
                    str_cat(what, ": unknown value type ", int{v.val_type()}));
    }
    return out;
  }

  TensorDesc read_tensor(const pterun_fb::Tensor& t, const std::string& what) {
    TensorDesc d;
    auto dtype = dtype_from_number(t.scalar_type());
    PTERUN_CHECK(dtype.has_value(), ErrorCode::InvalidProgram, what, ": unknown scalar type ",
                 int{t.scalar_type()});
    d.dtype = *dtype;
    PTERUN_CHECK(t.storage_offset() == 0, ErrorCode::NotSupported, what, ": storage_offset ",
                 t.storage_offset(), " is not supported (must be 0)");

    const auto* sizes = t.sizes();
    const auto* dim_order = t.dim_order();
    PTERUN_CHECK(sizes != nullptr, ErrorCode::InvalidProgram, what, ": tensor has no sizes");
    PTERUN_CHECK(dim_order != nullptr, ErrorCode::InvalidProgram, what,
                 ": tensor has no dim_order");
    PTERUN_CHECK(sizes->size() <= kMaxRank, ErrorCode::InvalidProgram, what, ": rank ",
                 sizes->size(), " exceeds the limit of ", kMaxRank);
    size_t rank = sizes->size();
    PTERUN_CHECK(dim_order->size() == rank, ErrorCode::InvalidProgram, what, ": dim_order has ",
                 dim_order->size(), " entries for rank ", rank);
    d.sizes.assign(sizes->begin(), sizes->end());
    d.dim_order.assign(dim_order->begin(), dim_order->end());
    for (size_t i = 0; i < rank; ++i) {
      PTERUN_CHECK(d.sizes[i] >= 0, ErrorCode::InvalidProgram, what, ": size ", d.sizes[i],
                   " of dimension ", i, " is negative");
    }
    std::vector<bool> seen(rank, false);
    for (uint8_t dim : d.dim_order) {
      PTERUN_CHECK(dim < rank && !seen[dim], ErrorCode::InvalidProgram, what,
                   ": dim_order is not a permutation of 0..", rank - 1);
      seen[dim] = true;
    }
    auto numel = checked_numel(std::span<const int64_t>(d.sizes));
    auto nbytes = numel ? checked_mul(*numel, element_size(d.dtype)) : std::nullopt;
    PTERUN_CHECK(nbytes && *nbytes < (uint64_t{1} << 62), ErrorCode::InvalidProgram, what,
                 ": tensor byte size overflows");
    d.numel = *numel;
    d.nbytes = *nbytes;

    switch (t.shape_dynamism()) {
      case pterun_fb::TensorShapeDynamism_STATIC: d.dynamism = ShapeDynamism::Static; break;
      case pterun_fb::TensorShapeDynamism_DYNAMIC_BOUND:
        d.dynamism = ShapeDynamism::DynamicBound;
        break;
      case pterun_fb::TensorShapeDynamism_DYNAMIC_UNBOUND:
        d.dynamism = ShapeDynamism::DynamicUnbound;
        break;
      default:
        throw_error(ErrorCode::InvalidProgram,
                    str_cat(what, ": unknown shape dynamism ", int{t.shape_dynamism()}));
    }

    bool external = false;
    uint64_t mutable_entry = 0;
    if (const auto* extra = t.extra_tensor_info()) {
      d.name = fb_text(extra->fully_qualified_name(), what + ": fully_qualified_name");
      PTERUN_CHECK(extra->location() == pterun_fb::TensorDataLocation_SEGMENT ||
                       extra->location() == pterun_fb::TensorDataLocation_EXTERNAL,
                   ErrorCode::InvalidProgram, what, ": unknown data location ",
                   int{extra->location()});
      external = extra->location() == pterun_fb::TensorDataLocation_EXTERNAL;
      BufferDevice dev = device_of(extra->device_type(), extra->device_index(), what);
      d.device_type = dev.type;
      d.device_index = dev.index;
      mutable_entry = extra->mutable_data_segments_idx();
    }
    d.data_buffer_idx = t.data_buffer_idx();
    const auto* alloc = t.allocation_info();
    d.is_memory_planned = alloc != nullptr || d.data_buffer_idx != 0;

    if (alloc != nullptr) {
      d.memory_id = alloc->memory_id();
      d.memory_offset = uint64_t{alloc->memory_offset_low()} | uint64_t{alloc->memory_offset_high()}
                                                                   << 32;
      PTERUN_CHECK(d.memory_id >= 1 && d.memory_id <= desc_.buffer_sizes.size(),
                   ErrorCode::InvalidProgram, what, ": planned in buffer ", d.memory_id,
                   ", not one of 1..", desc_.buffer_sizes.size());
      auto end = checked_add(d.memory_offset, d.nbytes);
      uint64_t buffer_size = desc_.buffer_sizes[d.memory_id - 1];
      PTERUN_CHECK(end && *end <= buffer_size, ErrorCode::InvalidProgram, what, ": ", d.nbytes,
                   " bytes at offset ", d.memory_offset, " run past the end of planned buffer ",
                   d.memory_id, " (", buffer_size, " bytes)");
      // Kernels read and write elements in place: an element may not
      // straddle its alignment (ExecuTorch's planner aligns to 16 bytes).
      size_t elem = element_size(d.dtype);
      PTERUN_CHECK(elem == 0 || d.memory_offset % elem == 0, ErrorCode::InvalidProgram, what,
                   ": planned at offset ", d.memory_offset, " of buffer ", d.memory_id,
                   ", which is not a multiple of its element size (", elem, " bytes)");
    }

    if (external) {
      PTERUN_CHECK(!d.name.empty(), ErrorCode::InvalidProgram, what,
                   ": external tensor has no fully_qualified_name");
      d.storage = alloc ? TensorStorage::ExternalMutable : TensorStorage::External;
    } else if (alloc == nullptr && d.data_buffer_idx > 0) {
      d.storage = TensorStorage::Constant;
      d.data = data_.constant(d.data_buffer_idx, d.nbytes, what);
    } else if (alloc != nullptr && d.data_buffer_idx > 0) {
      d.storage = TensorStorage::PlannedWithData;
      d.data = data_.mutable_data(mutable_entry, d.data_buffer_idx, d.nbytes, what);
    } else {
      d.storage = alloc ? TensorStorage::Planned : TensorStorage::Unplanned;
    }
    PTERUN_CHECK(!d.is_constant() || d.dynamism == ShapeDynamism::Static, ErrorCode::InvalidProgram,
                 what, ": a constant tensor must have a static shape");
    return d;
  }

  void check_value_index(int64_t index, const std::string& what) const {
    PTERUN_CHECK(index >= 0 && static_cast<size_t>(index) < desc_.values.size(),
                 ErrorCode::InvalidProgram, what, ": value index ", index,
                 " is out of range (the method has ", desc_.values.size(), " values)");
  }

  void read_io() {
    const auto* inputs = plan_.inputs();
    const auto* outputs = plan_.outputs();
    PTERUN_CHECK(inputs != nullptr, ErrorCode::InvalidProgram, where_, ": has no input list");
    PTERUN_CHECK(outputs != nullptr, ErrorCode::InvalidProgram, where_, ": has no output list");
    for (flatbuffers::uoffset_t i = 0; i < inputs->size(); ++i) {
      int32_t idx = inputs->Get(i);
      std::string what = str_cat(where_, ", input ", i);
      check_value_index(idx, what);
      ValueKind kind = desc_.values[idx].kind;
      PTERUN_CHECK(kind == ValueKind::None || kind == ValueKind::Int || kind == ValueKind::Bool ||
                       kind == ValueKind::Double || kind == ValueKind::Tensor ||
                       kind == ValueKind::String,
                   ErrorCode::InvalidProgram, what, ": a ", value_kind_name(kind),
                   " cannot be a method input");
      desc_.inputs.push_back(idx);
    }
    for (flatbuffers::uoffset_t i = 0; i < outputs->size(); ++i) {
      int32_t idx = outputs->Get(i);
      check_value_index(idx, str_cat(where_, ", output ", i));
      desc_.outputs.push_back(idx);
    }
  }

  void read_operators() {
    const auto* ops = plan_.operators();
    for (flatbuffers::uoffset_t i = 0; i < vec_size(ops); ++i) {
      const auto* op = ops->Get(i);
      PTERUN_CHECK(op != nullptr && op->name() != nullptr, ErrorCode::InvalidProgram, where_,
                   ", operator ", i, ": has no name");
      std::string what = str_cat(where_, ", operator ", i);
      desc_.operators.push_back(
          {fb_text(op->name(), what + ": name"), fb_text(op->overload(), what + ": overload")});
    }
  }

  void read_delegates() {
    const auto* delegates = plan_.delegates();
    for (flatbuffers::uoffset_t i = 0; i < vec_size(delegates); ++i) {
      const auto* d = delegates->Get(i);
      std::string what = str_cat(where_, ", delegate ", i);
      PTERUN_CHECK(d != nullptr && d->id() != nullptr, ErrorCode::InvalidProgram, what,
                   ": has no backend id");
      DelegateDesc out;
      out.id = fb_text(d->id(), what + ": backend id");
      const auto* processed = d->processed();
      PTERUN_CHECK(processed != nullptr, ErrorCode::InvalidProgram, what, " (", printable(out.id),
                   "): has no payload reference");
      if (processed->location() == pterun_fb::DataLocation_INLINE) {
        out.inline_payload = true;
        const auto* blobs = program_.backend_delegate_data();
        PTERUN_CHECK(processed->index() < vec_size(blobs), ErrorCode::InvalidProgram, what,
                     ": inline payload ", processed->index(), " is out of range (", vec_size(blobs),
                     " inline payloads)");
        const auto* blob = blobs->Get(processed->index());
        if (blob != nullptr && blob->data() != nullptr) {
          out.payload = {blob->data()->data(), blob->data()->size()};
        }
      } else {
        PTERUN_CHECK(processed->location() == pterun_fb::DataLocation_SEGMENT,
                     ErrorCode::InvalidProgram, what, ": unknown payload location ",
                     int{processed->location()});
        out.payload = data_.segment(processed->index(), what);
      }
      if (const auto* specs = d->compile_specs()) {
        for (const auto* spec : *specs) {
          PTERUN_CHECK(spec != nullptr && spec->key() != nullptr, ErrorCode::InvalidProgram, what,
                       ": compile spec without a key");
          CompileSpecDesc cs{fb_text(spec->key(), what + ": compile spec key"), {}};
          if (spec->value()) cs.value = {spec->value()->data(), spec->value()->size()};
          out.compile_specs.push_back(std::move(cs));
        }
      }
      desc_.delegates.push_back(std::move(out));
    }
  }

  void read_chains() {
    const auto* chains = plan_.chains();
    PTERUN_CHECK(chains != nullptr, ErrorCode::InvalidProgram, where_, ": has no chains");
    for (flatbuffers::uoffset_t c = 0; c < chains->size(); ++c) {
      const auto* chain = chains->Get(c);
      PTERUN_CHECK(chain != nullptr, ErrorCode::InvalidProgram, where_, ", chain ", c, ": missing");
      const auto* instructions = chain->instructions();
      ChainDesc out;
      size_t n = vec_size(instructions);
      for (size_t i = 0; i < n; ++i) {
        const auto* instr = instructions->Get(static_cast<flatbuffers::uoffset_t>(i));
        std::string what = str_cat(where_, ", chain ", c, ", instruction ", i);
        PTERUN_CHECK(instr != nullptr, ErrorCode::InvalidProgram, what, ": missing");
        out.instructions.push_back(read_instruction(*instr, n, what));
      }
      desc_.chains.push_back(std::move(out));
    }
  }

  std::vector<int32_t> read_args(const flatbuffers::Vector<int32_t>* args,
                                 const std::string& what) {
    PTERUN_CHECK(args != nullptr, ErrorCode::InvalidProgram, what, ": has no argument list");
    std::vector<int32_t> out(args->begin(), args->end());
    for (int32_t a : out) check_value_index(a, what);
    return out;
  }

  InstructionDesc read_instruction(const pterun_fb::Instruction& instr, size_t chain_length,
                                   const std::string& what) {
    InstructionDesc out;
    switch (instr.instr_args_type()) {
      case pterun_fb::InstructionArguments_KernelCall: {
        const auto* k = instr.instr_args_as_KernelCall();
        PTERUN_CHECK(k != nullptr, ErrorCode::InvalidProgram, what, ": KernelCall is missing");
        out.kind = InstructionKind::KernelCall;
        out.index = k->op_index();
        PTERUN_CHECK(out.index >= 0 && static_cast<size_t>(out.index) < desc_.operators.size(),
                     ErrorCode::InvalidProgram, what, ": operator index ", out.index,
                     " is out of range (", desc_.operators.size(), " operators)");
        out.args = read_args(k->args(), what);
        break;
      }
      case pterun_fb::InstructionArguments_DelegateCall: {
        const auto* d = instr.instr_args_as_DelegateCall();
        PTERUN_CHECK(d != nullptr, ErrorCode::InvalidProgram, what, ": DelegateCall is missing");
        out.kind = InstructionKind::DelegateCall;
        out.index = d->delegate_index();
        PTERUN_CHECK(out.index >= 0 && static_cast<size_t>(out.index) < desc_.delegates.size(),
                     ErrorCode::InvalidProgram, what, ": delegate index ", out.index,
                     " is out of range (", desc_.delegates.size(), " delegates)");
        out.args = read_args(d->args(), what);
        break;
      }
      case pterun_fb::InstructionArguments_MoveCall: {
        const auto* m = instr.instr_args_as_MoveCall();
        PTERUN_CHECK(m != nullptr, ErrorCode::InvalidProgram, what, ": MoveCall is missing");
        out.kind = InstructionKind::MoveCall;
        out.index = m->move_from();
        out.target = m->move_to();
        check_value_index(out.index, what);
        check_value_index(out.target, what);
        break;
      }
      case pterun_fb::InstructionArguments_JumpFalseCall: {
        const auto* j = instr.instr_args_as_JumpFalseCall();
        PTERUN_CHECK(j != nullptr, ErrorCode::InvalidProgram, what, ": JumpFalseCall is missing");
        out.kind = InstructionKind::JumpFalseCall;
        out.index = j->cond_value_index();
        out.target = j->destination_instruction();
        check_value_index(out.index, what);
        ValueKind kind = desc_.values[out.index].kind;
        PTERUN_CHECK(kind == ValueKind::Bool || kind == ValueKind::Tensor,
                     ErrorCode::InvalidProgram, what, ": jump condition is a ",
                     value_kind_name(kind), ", not a Bool or a Tensor");
        PTERUN_CHECK(out.target >= 0 && static_cast<size_t>(out.target) <= chain_length,
                     ErrorCode::InvalidProgram, what, ": jump destination ", out.target,
                     " is outside the chain of ", chain_length, " instructions");
        break;
      }
      case pterun_fb::InstructionArguments_FreeCall: {
        const auto* f = instr.instr_args_as_FreeCall();
        PTERUN_CHECK(f != nullptr, ErrorCode::InvalidProgram, what, ": FreeCall is missing");
        out.kind = InstructionKind::FreeCall;
        out.index = f->value_index();
        check_value_index(out.index, what);
        PTERUN_CHECK(desc_.values[out.index].kind == ValueKind::Tensor, ErrorCode::InvalidProgram,
                     what, ": FreeCall of a ", value_kind_name(desc_.values[out.index].kind),
                     ", not a Tensor");
        break;
      }
      default:
        throw_error(ErrorCode::InvalidProgram,
                    str_cat(what, ": unknown instruction type ", int{instr.instr_args_type()}));
    }
    return out;
  }

  const pterun_fb::ExecutionPlan& plan_;
  const pterun_fb::Program& program_;
  const ProgramData& data_;
  MethodDesc desc_;
  std::string where_;
};

}  // namespace

MethodDesc read_method(const pterun_fb::ExecutionPlan& plan, size_t plan_index,
                       const pterun_fb::Program& program, const ProgramData& data) {
  return MethodReader(plan, plan_index, program, data).read();
}

}  // namespace pterun::format
