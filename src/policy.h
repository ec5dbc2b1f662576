/*
 * policy.h — a policy (what the user allows) and the permission profile it
 * resolves into for one request (absolute, resolved paths the adapters use).
 */
#ifndef CORRAL_POLICY_H
#define CORRAL_POLICY_H

#include <jansson.h>

#include "corral.h"
#include "netrules.h"

struct path_list {
  char **v;
  size_t n;
  size_t cap; /* slots allocated in v, 0 when unknown (a copied vector) */
};

#define POLICY_NLISTS 9 /* indexed by corral_policy_list */

struct corral_policy {
  bool enforce;
  bool network_allow;
  bool network_filter;      /* `filter`: by name through the proxy (network_allow false) */
  struct net_rules net;
  bool block_unix;
  bool record_refusals;     /* init records what the sandbox refuses (refusals.c) */
  bool temp;                /* /tmp and $TMPDIR writable */
  bool workspace_writable;
  bool protected_set;       /* protectedNames given: replaces the defaults */
  struct path_list lists[POLICY_NLISTS];
  int64_t limits[CORRAL_LIMIT_COUNT]; /* CORRAL_LIMIT_DEFAULT, _NONE or a value */
};

struct profile {
  bool enforce;
  bool network_allow;
  bool network_filter;
  const struct net_rules *net;   /* the policy's, borrowed: it outlives the profile */
  bool block_unix;
  bool record_refusals;
  bool restricted_read;          /* read roots do not include "/" */
  struct path_list read_roots;
  struct path_list write_roots;  /* sorted, outer before inner */
  struct path_list deny_read;
  /* For each deny-read path, as the profile's resolution found it (from
   * the directory listings read then), so that the sandbox's setup need
   * not look again: 0 when it exists, else the length of its first missing
   * component's prefix, SIZE_MAX when it is to be looked at again
   * (profile_created).  NULL when unknown. */
  size_t *deny_missing;
  struct path_list deny_write;
  struct path_list pinned;       /* bound onto themselves: no rename, no removal */
  struct path_list hidden_sockets; /* daemons that would act outside: masked */
  /* Deny-read paths whose last component, as named, is a symlink (~/.ssh
   * -> dotfiles/ssh): the link's real place.  deny_read holds the target;
   * in a write root the link itself is covered too, since a command that
   * removed it would leave later runs not knowing the target is a store. */
  struct path_list deny_links;
  struct path_list allow_read;
  struct path_list platform_roots;
  struct path_list protected_names;
  struct path_list allow_protected; /* protected paths made writable on purpose */
  struct path_list sensitive_env;
  int64_t limits[CORRAL_LIMIT_COUNT]; /* final values (run_limits.h); 0: none */
};

corral_policy *policy_copy(const corral_policy *p);
/* The supervisor made directory `path` after resolving the profile (the
 * runtime directory): what deny_missing says about it is stale. */
void profile_created(struct profile *pr, const char *path);
/* $XDG_CONFIG_HOME, else ~/.config; and the user's policy file in it.
 * false when there is no home directory either. */
bool user_config_dir(char *out, size_t size);
/* The user's home directory: $HOME if absolute, else the password
 * entry's; false when neither gives one. */
bool user_home(char *out, size_t size);
/* $VAR if absolute, else user_home()/in_home; false when neither is. */
bool xdg_dir(const char *var, const char *in_home, char *out, size_t size);
bool user_policy_path(char *out, size_t size);
/* The policy file's JSON from memory; `name` is used in messages. */
int policy_load_buffer(corral_policy *p, const char *data, size_t len, const char *name,
                       corral_error *err);
int profile_resolve(const corral_policy *p, char *const *roots, size_t nroots,
                    struct profile *out, corral_error *err);
void profile_free(struct profile *pr);
json_t *profile_to_json(const struct profile *pr);

int path_list_add(struct path_list *l, const char *s);
/* Adds `s` itself (malloc'd), which the list then owns; freed on failure. */
int path_list_take(struct path_list *l, char *s);
bool path_list_has(const struct path_list *l, const char *s);
void path_list_free(struct path_list *l);
/* Is `path` equal to `root` or below it? */
bool path_is_under(const char *path, const char *root);
/* ~ expanded, absolute, symlinks resolved where the path exists (else
 * normalised lexically).  Returns a new string or NULL with err set. */
char *path_resolve(const char *path, corral_error *err);
/* Adds path_resolve(path) unless it is there; 0 or a negative errno. */
int path_list_add_real(struct path_list *l, const char *path, corral_error *err);

#endif
