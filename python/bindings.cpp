//===- bindings.cpp - the `tbc._tbc` Python extension ---------------------===//
//
// Modules, sessions, batched forwards and generation of the runtime for
// Python, with NumPy arrays in and out. Python-facing wrappers own the
// runtime's objects (the runtime itself is built without RTTI, which
// pybind11 needs only for the types it binds). Every runtime error becomes
// a tbc.Error with the runtime's message; nothing aborts.
//
//===----------------------------------------------------------------------===//

#include "tbc/Runtime/Runtime.h"
#include "tbc/Runtime/Generate.h"
#include "tbc/Support/Safetensors.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

namespace py = pybind11;
using namespace tbc::rt;

namespace {
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A float vector handed to NumPy without a copy: the array owns it.
py::array_t<float> toArray(std::vector<float> &&values, std::vector<py::ssize_t> shape) {
  auto *owned = new std::vector<float>(std::move(values));
  py::capsule free(owned, [](void *p) { delete static_cast<std::vector<float> *>(p); });
  return py::array_t<float>(shape, owned->data(), free);
}

std::vector<int32_t> toIds(const py::array_t<int32_t, py::array::c_style | py::array::forcecast> &a) {
  if (a.ndim() != 1)
    throw Error("token ids must be a 1-D array, not " + std::to_string(a.ndim()) + "-D");
  return std::vector<int32_t>(a.data(), a.data() + a.size());
}

struct PyModule {
  std::unique_ptr<Module> module;
};

struct PySession {
  std::shared_ptr<PyModule> owner; // the module outlives its sessions
  std::unique_ptr<Session> session;
};

std::shared_ptr<PyModule> load(const std::string &path) {
  std::string error;
  auto m = std::make_shared<PyModule>();
  {
    py::gil_scoped_release unlocked;
    m->module = Module::load(path, error);
  }
  if (!m->module)
    throw Error(error);
  return m;
}

void bind(PyModule &m, const std::string &path) {
  std::string error;
  bool ok;
  {
    py::gil_scoped_release unlocked;
    std::unique_ptr<WeightStore> store = WeightStore::open(path, error);
    ok = store && m.module->bindWeights(*store, error);
  }
  if (!ok)
    throw Error(error);
}

/// Greedy or sampled continuations of several prompts, batched
/// (BatchGenerator: the same generation `tbc run --generate` does).
std::vector<std::vector<int32_t>> generate(PyModule &m, std::vector<std::vector<int32_t>> prompts,
                                           const GenerationOptions &options) {
  if (std::string why = options.sampling.check(); !why.empty())
    throw Error(why);
  if (options.maxNewTokens < 0)
    throw Error("max_new_tokens must be >= 0");
  std::vector<std::vector<int32_t>> out(prompts.size());
  if (prompts.empty() || options.maxNewTokens == 0)
    return out;
  std::string error;
  bool ok;
  {
    py::gil_scoped_release unlocked;
    BatchGenerator generator(*m.module, std::move(prompts), options);
    ok = generator.prefill(error);
    while (ok && generator.running())
      ok = generator.step(error);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = generator.generated(i);
  }
  if (!ok)
    throw Error(error);
  return out;
}
} // namespace

PYBIND11_MODULE(_tbc, m) {
  m.doc() = "tbc runtime: load compiled .tbcm modules, bind weights, run and generate";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);

  py::class_<PyModule, std::shared_ptr<PyModule>>(m, "Module")
      .def_static("load", &load, py::arg("path"), "Loads a compiled module (.tbcm).")
      .def("bind", &bind, py::arg("weights"),
           "Binds a checkpoint: a .safetensors file, a sharded index, or a Hugging Face folder.")
      .def("bind_random", [](PyModule &self, uint64_t seed) { self.module->bindRandomWeights(seed); },
           py::arg("seed") = 0, "Binds deterministic random weights.")
      .def_property_readonly("vocab_size", [](const PyModule &self) { return self.module->vocabSize(); })
      .def_property_readonly("architecture",
                             [](const PyModule &self) { return self.module->architecture(); })
      .def_property_readonly("max_positions",
                             [](const PyModule &self) { return self.module->maxPositions(); })
      .def_property_readonly("tap_names",
                             [](const PyModule &self) { return self.module->tapNames(); },
                             "The tensor taps compiled in (tbc compile --taps): Hugging Face "
                             "module paths, in the order the schedule writes them.")
      .def("session",
           [](std::shared_ptr<PyModule> self, int64_t capacity) {
             if (capacity < 0)
               throw Error("capacity must be >= 0 (0: the model's maximum)");
             auto s = std::make_unique<PySession>();
             s->owner = self;
             s->session = std::make_unique<Session>(*self->module, capacity);
             return s;
           },
           py::arg("capacity") = 0, "A new sequence (its own KV cache).")
      .def("_generate",
           [](PyModule &self, std::vector<std::vector<int32_t>> prompts, int64_t maxNewTokens,
              double temperature, int64_t topK, double topP, double repetitionPenalty,
              uint64_t seed, std::vector<int32_t> stop, int64_t capacity) {
             GenerationOptions o;
             o.maxNewTokens = maxNewTokens;
             o.sampling.temperature = temperature;
             o.sampling.topK = topK;
             o.sampling.topP = topP;
             o.sampling.repetitionPenalty = repetitionPenalty;
             o.sampling.seed = seed;
             o.stopTokens = std::move(stop);
             o.capacity = capacity;
             return generate(self, std::move(prompts), o);
           });

  py::class_<PySession>(m, "Session")
      .def("forward",
           [](PySession &self, const py::array_t<int32_t, py::array::c_style | py::array::forcecast> &ids,
              bool last) {
             std::vector<int32_t> tokens = toIds(ids);
             std::vector<float> logits;
             std::string error;
             bool ok;
             {
               py::gil_scoped_release unlocked;
               ok = self.session->forward(tokens, logits, error,
                                          last ? LogitRows::Last : LogitRows::All);
             }
             if (!ok)
               throw Error(error);
             py::ssize_t vocab = py::ssize_t(self.owner->module->vocabSize());
             return toArray(std::move(logits), {py::ssize_t(logits.size()) / vocab, vocab});
           },
           py::arg("ids"), py::arg("last") = false,
           "Runs token ids after those seen; returns float32 logits [len(ids), vocab] "
           "([1, vocab] with last=True).")
      .def_property_readonly("position", [](const PySession &s) { return s.session->position(); })
      .def_property_readonly("capacity", [](const PySession &s) { return s.session->capacity(); })
      .def("reset", [](PySession &s) { s.session->reset(); })
      .def("set_tapping", [](PySession &s, bool on) { s.session->setTapping(on); },
           py::arg("on") = true,
           "Copy the module's taps out as each forward runs (see taps()).")
      .def("taps",
           [](const PySession &s) {
             py::dict out;
             for (const Session::Tap &t : s.session->taps())
               out[py::str(t.name)] = toArray(std::vector<float>(t.data), {py::ssize_t(t.rows),
                                                                           py::ssize_t(t.width)});
             return out;
           },
           "The last forward call's taps: {module path: float32 [tokens, width]}.");
}
