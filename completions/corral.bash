# bash completion for corral
_corral() {
  local cur prev cmd
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "run exec mcp policy doctor --help --version" -- "$cur"))
    return
  fi
  # after "--" the rest is the command: complete programs and files
  local i
  for ((i = 2; i < COMP_CWORD; i++)); do
    if [ "${COMP_WORDS[i]}" = "--" ]; then
      COMPREPLY=($(compgen -c -f -- "$cur"))
      return
    fi
  done
  case "$prev" in
    --policy|--workspace|--allow-write|--deny-write|--deny-read|--allow-read|--allow-protected|--read-root|--report|--request|--shell)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --network) COMPREPLY=($(compgen -W "deny allow" -- "$cur")); return ;;
    --backend) COMPREPLY=($(compgen -W "auto linux landlock" -- "$cur")); return ;;
  esac
  # the flags come from the command's own --help, so they cannot drift
  local flags
  flags=$(corral "$cmd" --help 2>/dev/null | grep -oE '^  --[a-z-]+' | tr -d ' ')
  COMPREPLY=($(compgen -W "$flags --help" -- "$cur"))
}
complete -F _corral corral
