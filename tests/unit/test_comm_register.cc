// ncclCommRegister / ncclCommDeregister: the communicator owns its registrations, so destroy and
// abort free them, and a handle that is not a live registration of that communicator is an error.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "core/registrations.h"
#include "nccl.h"

namespace {

using atl::RegistrationTable;

ncclComm_t oneRankComm() {
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  return comm;
}

TEST(CommRegister, DestroyAndAbortFreeTheRegistrations) {
  const size_t before = RegistrationTable::liveCount();
  std::vector<char> buf(4096);
  for (bool abort : {false, true}) {
    ncclComm_t comm = oneRankComm();
    ASSERT_NE(comm, nullptr);
    void* handles[3] = {};
    for (void*& h : handles) ASSERT_EQ(ncclCommRegister(comm, buf.data(), buf.size(), &h), ncclSuccess);
    EXPECT_EQ(RegistrationTable::liveCount(), before + 3);
    // The user never deregistered: the communicator's end must release them anyway.
    ASSERT_EQ(abort ? ncclCommAbort(comm) : ncclCommDestroy(comm), ncclSuccess);
    EXPECT_EQ(RegistrationTable::liveCount(), before) << (abort ? "ncclCommAbort" : "ncclCommDestroy");
  }
}

TEST(CommRegister, DeregisterRejectsHandlesThatAreNotLiveRegistrationsOfThisComm) {
  ncclComm_t a = oneRankComm(), b = oneRankComm();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<char> buf(256);
  void* h = nullptr;
  ASSERT_EQ(ncclCommRegister(a, buf.data(), buf.size(), &h), ncclSuccess);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(ncclCommDeregister(b, h), ncclInvalidArgument);  // another communicator's
  EXPECT_EQ(ncclCommDeregister(a, nullptr), ncclInvalidArgument);
  int garbage = 0;
  EXPECT_EQ(ncclCommDeregister(a, &garbage), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDeregister(a, h), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(a, h), ncclInvalidArgument);  // twice
  void* empty = nullptr;
  EXPECT_EQ(ncclCommRegister(a, nullptr, 0, &empty), ncclSuccess);  // a zero-size buffer may be NULL
  EXPECT_EQ(ncclCommDeregister(a, empty), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(a), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(b), ncclSuccess);
}

TEST(CommRegister, HandleFromADestroyedCommIsRejectedByItsSuccessor) {
  // The allocator often hands a new communicator the address of one just destroyed; a handle
  // from the dead one must still be refused, not match because the address does.
  std::vector<char> buf(256);
  for (int i = 0; i < 8; ++i) {
    ncclComm_t dead = oneRankComm();
    ASSERT_NE(dead, nullptr);
    void* h = nullptr;
    ASSERT_EQ(ncclCommRegister(dead, buf.data(), buf.size(), &h), ncclSuccess);
    ASSERT_EQ(ncclCommDestroy(dead), ncclSuccess);
    EXPECT_EQ(ncclCommDeregister(dead, h), ncclInvalidArgument);  // the communicator is gone
    ncclComm_t next = oneRankComm();
    ASSERT_NE(next, nullptr);
    EXPECT_EQ(ncclCommDeregister(next, h), ncclInvalidArgument) << "successor at the same address: " << (next == dead);
    ASSERT_EQ(ncclCommDestroy(next), ncclSuccess);
  }
}

}  // namespace
