// SCN_UNDER_ASAN: defined when the test is built with AddressSanitizer (gcc's __SANITIZE_ADDRESS__, clang's
// __has_feature), for tests whose premise the sanitizer changes (its quarantine holds freed memory, its shadow
// reserves address space).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SCN_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SCN_UNDER_ASAN 1
#endif
#endif
