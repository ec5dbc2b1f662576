/*
 * environment.c — what the command's environment keeps, loses and gains.
 *
 * Secrets in variables are removed (case-insensitively), markers say the
 * command is sandboxed, and tool caches point into the runtime directory so
 * npm, pip, cargo and go neither write into the workspace nor fail on a
 * read-only home.  PATH, TERM, HOME and the XDG config/data/state locations
 * are kept: redirecting HOME breaks git's identity.
 */
#include <stdio.h>
#include <strings.h>

#include "../internal.h"
#include "linux.h"

static const char *const secret_env[] = {
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",      "AWS_ACCESS_KEY_ID",
    "GOOGLE_APPLICATION_CREDENTIALS", "GITHUB_TOKEN",  "GH_TOKEN",
    "GH_ENTERPRISE_TOKEN",   "GITHUB_ENTERPRISE_TOKEN", "GITLAB_TOKEN",
    "OPENAI_API_KEY",        "ANTHROPIC_API_KEY",      "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",        "GOOGLE_API_KEY",         "GROQ_API_KEY",
    "OPENROUTER_API_KEY",    "DEEPSEEK_API_KEY",       "MISTRAL_API_KEY",
    "XAI_API_KEY",           "COHERE_API_KEY",         "PERPLEXITY_API_KEY",
    "AZURE_OPENAI_API_KEY",  "TOGETHER_API_KEY",       "FIREWORKS_API_KEY",
    "HF_TOKEN",              "HUGGING_FACE_HUB_TOKEN", "REPLICATE_API_TOKEN",
    "VOYAGE_API_KEY",        "AZURE_CLIENT_SECRET",    "NPM_TOKEN",
    "NODE_AUTH_TOKEN",       "CARGO_REGISTRY_TOKEN",   "TWINE_PASSWORD",
};

bool env_is_secret(const char *entry, const struct profile *pr) {
  size_t klen = strcspn(entry, "=");
  for (size_t i = 0; i < ARRAY_SIZE(secret_env); i++)
    if (strlen(secret_env[i]) == klen && strncasecmp(entry, secret_env[i], klen) == 0)
      return true;
  for (size_t i = 0; pr && i < pr->sensitive_env.n; i++)
    if (strlen(pr->sensitive_env.v[i]) == klen &&
        strncasecmp(entry, pr->sensitive_env.v[i], klen) == 0)
      return true;
  return false;
}

int env_set(char ***envp, size_t *envc, const char *key, const char *value) {
  size_t klen = strlen(key), len = klen + strlen(value) + 2;
  char *kv = malloc(len);
  if (!kv)
    return -ENOMEM;
  snprintf(kv, len, "%s=%s", key, value);
  for (size_t i = 0; i < *envc; i++)
    if (strncmp((*envp)[i], key, klen) == 0 && (*envp)[i][klen] == '=') {
      free((*envp)[i]);
      (*envp)[i] = kv;
      return 0;
    }
  int r = strv_push(envp, envc, kv);
  free(kv);
  return r;
}

int environment_prepare(char ***envp, size_t *envc, const struct profile *pr,
                        const char *backend, const char *runtime) {
  size_t kept = 0;
  for (size_t i = 0; i < *envc; i++) {
    if (env_is_secret((*envp)[i], pr)) {
      free((*envp)[i]);
      continue;
    }
    (*envp)[kept++] = (*envp)[i];
  }
  *envc = kept;
  (*envp)[kept] = NULL;
  int r = 0;
  r |= env_set(envp, envc, "CORRAL_SANDBOXED", "1");
  r |= env_set(envp, envc, "CORRAL_SANDBOX_BACKEND", backend);
  r |= env_set(envp, envc, "CORRAL_SANDBOX_NETWORK",
               pr->network_allow ? "allow" : pr->network_filter ? "filter" : "deny");
  /* The caller's test override of the proxy's resolver is not the command's. */
  for (size_t i = 0; i < *envc; i++)
    if (strncmp((*envp)[i], "CORRAL_PROXY_HOSTS=", 19) == 0) {
      free((*envp)[i]);
      memmove(&(*envp)[i], &(*envp)[i + 1], (*envc - i) * sizeof **envp);
      (*envc)--;
      break;
    }
  if (pr->network_filter) {
    /* The proxies init listens on (proxy.h), in the spellings tools read:
     * curl, git, pip and go the variables in either case; npm its own;
     * Node's own fetch and http only with NODE_USE_ENV_PROXY. */
    static const struct {
      const char *var, *value;
    } proxy_env[] = {
        {"HTTP_PROXY", "http://127.0.0.1:3128"},  {"http_proxy", "http://127.0.0.1:3128"},
        {"HTTPS_PROXY", "http://127.0.0.1:3128"}, {"https_proxy", "http://127.0.0.1:3128"},
        {"ALL_PROXY", "socks5h://127.0.0.1:1080"}, {"all_proxy", "socks5h://127.0.0.1:1080"},
        {"NO_PROXY", "localhost,127.0.0.1,::1"},  {"no_proxy", "localhost,127.0.0.1,::1"},
        {"npm_config_proxy", "http://127.0.0.1:3128"},
        {"npm_config_https_proxy", "http://127.0.0.1:3128"},
        {"NODE_USE_ENV_PROXY", "1"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(proxy_env); i++)
      r |= env_set(envp, envc, proxy_env[i].var, proxy_env[i].value);
  }
  if (runtime) {
    char buf[4200];
    static const struct {
      const char *var, *sub;
    } redirect[] = {
        {"XDG_CACHE_HOME", "cache"},          {"TMPDIR", "tmp"},
        {"TMP", "tmp"},                       {"TEMP", "tmp"},
        {"npm_config_cache", "cache/npm"},    {"YARN_CACHE_FOLDER", "cache/yarn"},
        {"COREPACK_HOME", "data/corepack"},   {"PIP_CACHE_DIR", "cache/pip"},
        {"GOCACHE", "cache/go-build"},        {"GOMODCACHE", "data/go-mod"},
        {"CARGO_HOME", "data/cargo"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(redirect); i++) {
      snprintf(buf, sizeof buf, "%s/%s", runtime, redirect[i].sub);
      r |= env_set(envp, envc, redirect[i].var, buf);
    }
  }
  return r ? -ENOMEM : 0;
}
