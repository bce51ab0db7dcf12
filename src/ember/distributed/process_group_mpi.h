#pragma once
// Internal to ember::distributed (distributed.cpp): the MPI process group
// (process_group_mpi.cpp; docs/distributed.md, "The MPI backend"). Built when CMake found
// MPI (Debian: libopenmpi-dev); otherwise these functions throw an ember::Error saying
// how to get it.

#include <vector>

#include "ember/distributed/process_group.h"

namespace ember::distributed::detail {

// Whether this build has the MPI backend.
bool mpi_built();

// The default group over MPI_COMM_WORLD. Initializes MPI (MPI_THREAD_MULTIPLE) unless the
// program did; rank and size come from MPI (mpirun), not from the environment. op names
// the caller in errors.
ProcessGroupPtr make_mpi_world_group(ProcessGroup::Options options, const char* op);

// A subgroup of the default MPI group `world` with the given sorted global ranks. Every
// rank of `world` calls it (members or not, as new_group requires); non-members get null.
ProcessGroupPtr make_mpi_subgroup(const ProcessGroupPtr& world, const std::vector<int>& ranks,
                                  ProcessGroup::Options options);

}  // namespace ember::distributed::detail
