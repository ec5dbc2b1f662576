/* libFuzzer: request JSON decoding, validation and a round trip. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  corral_request req;
  corral_error err;
  if (corral_request_from_json((const char *)data, size, &req, &err) == 0) {
    corral_request_validate(&req, &err);
    char *json = corral_request_to_json(&req);
    corral_request again;
    /* what we encode must decode again, to the same encoding */
    if (json && corral_request_from_json(json, strlen(json), &again, &err) == 0) {
      char *json2 = corral_request_to_json(&again);
      if (!json2 || strcmp(json, json2) != 0)
        abort();
      free(json2);
      corral_request_free(&again);
    } else if (json) {
      abort();
    }
    free(json);
    corral_request_free(&req);
  }
  corral_outcome out;
  if (corral_outcome_from_json((const char *)data, size, &out, &err) == 0) {
    corral_outcome_validate(&out, &err);
    free(corral_outcome_to_json(&out));
    corral_outcome_free(&out);
  }
  return 0;
}
