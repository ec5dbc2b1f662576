/* libFuzzer: policy file decoding and resolution into a profile. */
#include <stdint.h>
#include <stdlib.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  corral_policy *p = corral_policy_new();
  corral_error err;
  if (policy_load_buffer(p, (const char *)data, size, "fuzz", &err) == 0) {
    const char *roots[] = {"/tmp"};
    free(corral_policy_profile_json(p, roots, 1, &err));
  }
  corral_policy_free(p);
  return 0;
}
