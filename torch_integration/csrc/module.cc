// module.cc - the Python module _matex_torch: what matex_torch's Python code
// calls to create backends, agree on a rendezvous and shut down.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <mpi.h>

#include <stdexcept>
#include <string>
#include <torch/python.h>

#include "backend.h"
#include "world.h"

namespace py = pybind11;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "libmatexcomm's c10d backend (see matex_torch)";
  // The backend's own Python type, below torch's Backend: c10d calls
  // perform_nocolor_split() on non-members of a new_group when the default
  // group is bound to a device (init_process_group(device_id=...)) and its
  // backend supports splitting. matex creates a group on its members only,
  // so there is nothing for a non-member to do.
  py::class_<matex_torch::MatexBackend, c10::intrusive_ptr<matex_torch::MatexBackend>>(
      m, "MatexBackend", py::module_::import("torch._C._distributed_c10d").attr("Backend"))
      .def("perform_nocolor_split", [](matex_torch::MatexBackend&, const py::object&) {}, py::arg("device"));
  m.def("create_backend", &matex_torch::create_backend, py::arg("group_rank"), py::arg("group_size"),
        py::arg("global_ranks"), py::arg("timeout_seconds"), py::arg("group_name"),
        py::call_guard<py::gil_scoped_release>());
  m.def(
      "world", [] {
        matex_torch::WorldFacts facts = matex_torch::world_facts();
        return py::make_tuple(facts.rank, facts.size);
      },
      "(rank, size) of MPI_COMM_WORLD; initializes MPI on first use");
  m.def(
      "agree_rendezvous", [] {
        matex_torch::Rendezvous r;
        {
          py::gil_scoped_release release;
          r = matex_torch::agree_rendezvous();
        }
        return py::make_tuple(r.address, r.port);
      },
      "rank 0's address and a free port on it, agreed over MPI");
  m.def("shutdown", &matex_torch::shutdown, py::call_guard<py::gil_scoped_release>());
  m.def("set_native_flight_recording", &matex_torch::FlightRecord::set_native, py::arg("on"),
        "Whether backends created from now on record their calls in torch's flight recorder themselves");
  m.def("built_with_cuda", [] { return matex_built_with_cuda() == 1; },
        "True when libmatexcomm's collectives take GPU buffers");
  m.def(
      "config",
      [](const std::string& name) {
        const char* value = nullptr;
        if (matex_config_get(name.c_str(), &value) != MATEX_SUCCESS) throw std::invalid_argument(matex_last_error());
        return std::string(value);
      },
      py::arg("name"), "A MATEX_* setting as libmatexcomm's table validates it (ValueError when it is invalid)");
  m.def(
      "abort_job",
      [](int code) {
        int initialized = 0, finalized = 0, size = 1;
        MPI_Initialized(&initialized);
        MPI_Finalized(&finalized);
        if (!initialized || finalized) return;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
      },
      "Ends the whole MPI job (only when MPI runs with more than one rank)");
}
