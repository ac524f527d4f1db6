// The emulated GPU (ATOLL_DEVICE=emu): the cuda backend's contract on a machine without one.
// - Memory from allocate() is device memory in the sense that matters here: the host cannot touch
//   it. Its addresses are reserved without access, and the bytes live in a second mapping only
//   the emulator reads, so any host path that dereferences a device pointer crashes at once.
// - A stream is a thread that runs its work in order; the NULL stream is one more. Copies and
//   synchronisation go through the stream, as cudaMemcpyAsync does, so a collective that does not
//   wait for the stream's earlier work reads stale data and a test sees it.
#pragma once

#include <functional>

#include "device/device.h"

namespace atl::device {

const Device& emu();

/// Streams of the emulated device, for tests and the perf tools (the cuda backend's users create
/// theirs with the CUDA runtime).
Result<cudaStream_t> emuStreamCreate();
Status emuStreamDestroy(cudaStream_t stream);
/// Appends `work` to `stream`: it runs after everything enqueued there before it. Tests use it to
/// stand for a kernel that writes a buffer late; it may read and write device memory only
/// through emuHostView().
Status emuEnqueue(cudaStream_t stream, std::function<void()> work);
/// Where the emulator keeps the bytes of device memory [ptr, ptr + bytes), or nullptr when that
/// range is not inside one allocation.
void* emuHostView(const void* ptr, size_t bytes);

}  // namespace atl::device
