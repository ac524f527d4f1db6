// The 128-byte ncclUniqueId: magic, version, flags, the root's packed address and the secret.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/hmac.h"
#include "base/socket.h"
#include "nccl.h"

namespace atl::bootstrap {

constexpr uint32_t kIdMagic = 0x41544f4c;  // "ATOL"
constexpr uint16_t kIdVersion = 1;
/// The id came from NCCL_COMM_ID: no root runs yet; rank 0 serves it at the id's address.
constexpr uint16_t kIdFlagCommId = 1;

struct IdLayout {
  uint32_t magic;
  uint16_t version;
  uint16_t flags;
  net::PackedAddr root;
  uint8_t secret[32];
  uint8_t reserved[NCCL_UNIQUE_ID_BYTES - 60];
};
static_assert(sizeof(IdLayout) == NCCL_UNIQUE_ID_BYTES);
static_assert(std::has_unique_object_representations_v<IdLayout>, "no padding: sent as its bytes");

ncclUniqueId encodeId(const IdLayout& layout);
IdLayout decodeId(const ncclUniqueId& id);

/// The secret every process derives from NCCL_COMM_ID and ATOLL_BOOTSTRAP_SECRET.
Secret deriveCommIdSecret(const std::string& commId, const std::string& extraSecret);

}  // namespace atl::bootstrap
