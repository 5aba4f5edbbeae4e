import { type Command, EXIT, GLOBAL_OPTIONS, type OptionSpec, positionals, UsageError } from '../command';
import { KINDS } from '../kinds';

/** `completion bash|zsh`: a completion script built from the command table, so it never goes stale. */

function flags(opts: Record<string, OptionSpec> | undefined): string[] {
  return Object.entries(opts ?? {}).flatMap(([n, o]) => [`--${n}`, ...(o.short ? [`-${o.short}`] : [])]);
}

type Listing = { name: string; options?: Record<string, OptionSpec> }[];

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
  return `# llmcap bash completion: source <(llmcap completion bash)
_llmcap() {
  local cur prev cmd="" sub="" i w
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
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
    get) [[ -z $sub ]] && COMPREPLY=($(compgen -W "${kinds}" -- "$cur")) ;;
    describe) [[ -z $sub ]] && COMPREPLY=($(compgen -W "${described}" -- "$cur")) ;;
    delete) [[ -z $sub ]] && COMPREPLY=($(compgen -W "${deletable}" -- "$cur")) ;;
${[...subs.entries()].map(([g, s]) => `    ${g}) [[ -z $sub ]] && COMPREPLY=($(compgen -W "${s.join(' ')}" -- "$cur")) ;;`).join('\n')}
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    help) COMPREPLY=($(compgen -W "${top.join(' ')}" -- "$cur")) ;;
  esac
}
complete -F _llmcap llmcap`;
}

/** The command table is passed in by main, which imports this module (a direct import would be circular). */
export const makeCompletion = (commands: () => Listing): Command => ({
  name: 'completion',
  summary: 'Print a shell completion script (bash or zsh)',
  usage: ['completion bash|zsh'],
  help: `Examples:
  source <(llmcap completion bash)            # in ~/.bashrc
  source <(llmcap completion zsh)             # in ~/.zshrc`,
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
