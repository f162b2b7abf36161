// config_agreement.h - makes sure every rank starts from a valid configuration
// and that the MATEX_* variables marked "same on all ranks" agree, before any
// communication that could hang on a disagreement.
#pragma once

#include <mpi.h>

#include <string>

#include "core/config.h"

namespace matexcomm {

// Collective over `comm`. `local_error` is the message of this rank's failed
// Config::from_environment(), or empty when `config` is valid. Throws
// Error(MATEX_ERR_CONFIG) on every rank when any rank's configuration is
// invalid or when two ranks differ in a same_on_all_ranks variable; the
// message names the variable and the ranks.
void agree_on_configuration(MPI_Comm comm, const Config& config, const std::string& local_error);

// Collective over `comm`: every rank passes its 64-bit digest (0 = "my value
// is invalid"). Returns -1 when all are equal and non-zero, else the lowest
// rank whose digest is 0 or differs from rank 0's.
int find_disagreeing_rank(MPI_Comm comm, uint64_t digest, bool* that_rank_invalid);

}  // namespace matexcomm
