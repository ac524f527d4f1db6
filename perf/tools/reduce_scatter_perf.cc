// reduce_scatter_perf: nccl-tests-compatible benchmark and checker of ncclReduceScatter.
#include "perf/common/driver.h"

int main(int argc, char** argv) { return atl::perf::toolMain(argc, argv, atl::perf::Coll::ReduceScatter); }
