// Environment variables read by the perf tools and the atollrun launcher (not by the library, whose
// variables live in src/base/param_list.h). atoll-info documents both tables in docs/ENV.md.
#pragma once

namespace atl::perf {

struct ToolEnvVar {
  const char* name;
  const char* readBy;
  const char* doc;
};

inline constexpr const char* kEnvUniqueId = "ATOLL_UNIQUE_ID";
inline constexpr const char* kEnvRank = "RANK";
inline constexpr const char* kEnvWorldSize = "WORLD_SIZE";
inline constexpr const char* kEnvLocalRank = "LOCAL_RANK";
inline constexpr const char* kEnvLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kEnvMasterAddr = "MASTER_ADDR";
inline constexpr const char* kEnvMasterPort = "MASTER_PORT";
inline constexpr const char* kEnvCorruptRank = "ATOLL_PERF_CORRUPT_RANK";

inline constexpr ToolEnvVar kToolEnvVars[] = {
    {kEnvUniqueId, "atollrun (sets), *_perf",
     "Hex-encoded ncclUniqueId (256 characters) of a root already serving the rendezvous; with RANK and "
     "WORLD_SIZE the perf tools join it instead of creating their own."},
    {kEnvRank, "atollrun (sets), *_perf", "Rank of this process (torchrun convention)."},
    {kEnvWorldSize, "atollrun (sets), *_perf", "Number of processes in the job."},
    {kEnvLocalRank, "atollrun (sets), *_perf", "Rank of this process among those on the same host."},
    {kEnvLocalWorldSize, "atollrun (sets)", "Number of processes on this host."},
    {kEnvMasterAddr, "*_perf",
     "With RANK/WORLD_SIZE (or an MPI launcher): address of rank 0; the tools set NCCL_COMM_ID=MASTER_ADDR:"
     "MASTER_PORT so every rank derives the same unique id without exchanging it."},
    {kEnvMasterPort, "*_perf", "Port for MASTER_ADDR (default 29500)."},
    {kEnvCorruptRank, "*_perf",
     "Test hook: this rank spoils the first element of its output (if it has one) after every checked call, "
     "before verification, so #wrong must count 1 per placement and row: checks the path of the counts "
     "to the table, which sums them outside the library (over TCP to process 0, or in memory within one "
     "process) so that a broken all-reduce cannot hide its own errors."},
    {"OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK", "*_perf",
     "Rank, size and local rank under Open MPI's mpirun."},
    {"PMI_RANK, PMI_SIZE, MPI_LOCALRANKID", "*_perf", "Rank, size and local rank under MPICH/Hydra or Slurm PMI."},
    {"PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, PMI_JOBID, SLURM_JOB_ID", "*_perf",
     "Job key under an MPI launcher without MASTER_ADDR: rank 0 publishes the unique id in "
     "/tmp/atoll-perf-<key>.id and the other ranks read it (waiting up to 120 s)."},
};

}  // namespace atl::perf
