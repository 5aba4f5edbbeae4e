import { type Command, EXIT, GLOBAL_OPTIONS, type OptionSpec, positionals, UsageError } from '../command';
import { KINDS } from '../kinds';

/** `completion bash|zsh`: a completion script built from the command table, so it never goes stale. */

function flags(opts: Record<string, OptionSpec> | undefined): string[] {
  return Object.entries(opts ?? {}).flatMap(([n, o]) => [`--${n}`, ...(o.short ? [`-${o.short}`] : [])]);
}

type Listing = { name: string; options?: Record<string, OptionSpec> }[];

/** The kind whose names a group's subcommand takes first: `model scale NAME`, `quota set SCOPE`, ... */
const NAMES_OF: Record<string, string> = { model: 'models', quota: 'scopes', scope: 'scopes' };

function bashScript(commands: Listing): string {
  const top = [...new Set(commands.map((c) => c.name.split(' ')[0]!)), 'help', 'version'];
  const subs = new Map<string, string[]>();
  const flagsOf = new Map<string, Set<string>>();
  for (const c of commands) {
    const [head, sub] = c.name.split(' ');
    if (sub) subs.set(head!, [...(subs.get(head!) ?? []), sub]);
    const set = flagsOf.get(head!) ?? new Set(flags(GLOBAL_OPTIONS));
    for (const f of flags(c.options)) set.add(f);
    flagsOf.set(head!, set);
  }
  const valueFlags = new Set<string>();
  for (const c of [{ options: GLOBAL_OPTIONS }, ...commands]) {
    for (const [n, o] of Object.entries(c.options ?? {})) {
      if (o.type === 'string') {
        valueFlags.add(`--${n}`);
        if (o.short) valueFlags.add(`-${o.short}`);
      }
    }
  }
  const kinds = KINDS.map((k) => k.plural).join(' ');
  // Only what each verb takes: pods and sources are listed, never described item by item or deleted.
  const described = KINDS.filter((k) => k.describe)
    .map((k) => k.plural)
    .join(' ');
  const deletable = KINDS.filter((k) => k.deletable)
    .map((k) => k.plural)
    .join(' ');
  // Where a resource's name goes, its names: the CLI itself lists them (get KIND -o name), with the caller's
  // own endpoint and credentials, so completion shows what that caller may read.
  return `# llmcap bash completion: source <(llmcap completion bash)
# Completes \`llmcap ...\` and \`npx llmcap ...\`; resource names are listed by the CLI (get KIND -o name).
_llmcap_names() {
  local kind="$1"
  [[ -n $kind ]] || return
  "\${_llmcap_cli[@]}" get "$kind" -o name 2>/dev/null | sed 's|^[^/]*/||'
}
_llmcap() {
  local cur prev cmd="" sub="" i w base=0
  local -a _llmcap_cli=("\${COMP_WORDS[0]}")
  # npx llmcap ...: the words after llmcap are ours; npx ... of anything else completes file names.
  if [[ \${COMP_WORDS[0]##*/} == npx ]]; then
    if [[ \${COMP_WORDS[1]} != llmcap || $COMP_CWORD -lt 2 ]]; then
      COMPREPLY=($(compgen -f -- "\${COMP_WORDS[COMP_CWORD]}"))
      return
    fi
    base=1
    _llmcap_cli=("\${COMP_WORDS[0]}" llmcap)
  fi
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  for ((i = base + 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "$w" in
      ${[...valueFlags].join('|')}) ((i++)) ;;
      -*) ;;
      *) if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $sub ]]; then sub=$w; fi ;;
    esac
  done
  case "$prev" in
    -f|--filename) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -o|--output) COMPREPLY=($(compgen -W "table wide json yaml name" -- "$cur")); return ;;
    --resource) COMPREPLY=($(compgen -W "gpus cores memory all" -- "$cur")); return ;;
    --ready) COMPREPLY=($(compgen -W "true false" -- "$cur")); return ;;
    --model|--fallback) COMPREPLY=($(compgen -W "$(_llmcap_names models)" -- "$cur")); return ;;
    --compute) COMPREPLY=($(compgen -W "$(_llmcap_names computes)" -- "$cur")); return ;;
    --owner|--parent|--scope) COMPREPLY=($(compgen -W "$(_llmcap_names scopes) shared" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    case "$cmd" in
${[...flagsOf.entries()].map(([c, f]) => `      ${c}) COMPREPLY=($(compgen -W "${[...f].join(' ')}" -- "$cur")) ;;`).join('\n')}
      *) COMPREPLY=($(compgen -W "${flags(GLOBAL_OPTIONS).join(' ')}" -- "$cur")) ;;
    esac
    return
  fi
  if [[ -z $cmd ]]; then COMPREPLY=($(compgen -W "${top.join(' ')}" -- "$cur")); return; fi
  case "$cmd" in
    get) if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "${kinds}" -- "$cur")); else COMPREPLY=($(compgen -W "$(_llmcap_names "$sub")" -- "$cur")); fi ;;
    describe) if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "${described}" -- "$cur")); else COMPREPLY=($(compgen -W "$(_llmcap_names "$sub")" -- "$cur")); fi ;;
    delete) if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "${deletable}" -- "$cur")); else COMPREPLY=($(compgen -W "$(_llmcap_names "$sub")" -- "$cur")); fi ;;
${[...subs.entries()].map(([g, s]) => `    ${g}) if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "${s.join(' ')}" -- "$cur")); ${NAMES_OF[g] ? `else COMPREPLY=($(compgen -W "$(_llmcap_names ${NAMES_OF[g]})" -- "$cur")); ` : ''}fi ;;`).join('\n')}
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    help) COMPREPLY=($(compgen -W "${top.join(' ')}" -- "$cur")) ;;
  esac
}
complete -F _llmcap llmcap
complete -o default -F _llmcap npx`;
}

/** The command table is passed in by main, which imports this module (a direct import would be circular). */
export const makeCompletion = (commands: () => Listing): Command => ({
  name: 'completion',
  summary: 'Print a shell completion script (bash or zsh)',
  usage: ['completion bash|zsh'],
  help: `Completes commands, options and resource names (listed by the CLI itself with the endpoint and
credentials in force, so a caller is offered what it may read), for \`llmcap ...\` and \`npx llmcap ...\`.

Examples:
  source <(llmcap completion bash)            # in ~/.bashrc
  source <(llmcap completion zsh)             # in ~/.zshrc
  source <(npx llmcap completion bash)        # from the repository, without llmcap on PATH`,
  async run(ctx) {
    const [shell] = positionals(ctx.args, 1, 1, 'shell (bash or zsh)');
    const script = bashScript(commands());
    if (shell === 'bash') ctx.out(script);
    // zsh runs bash completion functions through bashcompinit.
    else if (shell === 'zsh') ctx.out(`autoload -U +X bashcompinit && bashcompinit\n${script}`);
    else throw new UsageError(`completion is for bash or zsh, not ${shell}`);
    return EXIT.ok;
  },
});
