# Field-by-field encoding of the records published at the rendezvous (base/wire_codec.h).
add_executable(test_wire_codec ${CMAKE_CURRENT_LIST_DIR}/test_wire_codec.cc)
target_link_libraries(test_wire_codec PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_wire_codec DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)
