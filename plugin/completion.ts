// Shell completion as cobra does it (https://github.com/spf13/cobra/blob/main/completions.go): the shell script
// calls the hidden command `__complete <args...> <word being typed>`, which prints one candidate a line
// ("value<TAB>description") and then ":<directive>". kubectl (1.26 and later) completes a plugin's arguments the same
// way through an executable named kubectl_complete-ads on PATH, called with the arguments alone (no __complete);
// that executable is shipped beside kubectl-ads.
import { GLOBAL_FLAGS, parseArgvLenient, type FlagSpec } from './args.ts';

/** cobra's ShellCompDirective bits. */
export const Directive = {
  Default: 0,
  Error: 1,
  NoSpace: 2,
  NoFileComp: 4,
  KeepOrder: 32,
} as const;

/** What completes a positional argument: DaemonSet names from the cluster, or fixed words. */
export type ArgKind = 'daemonset' | { words: readonly { word: string; help: string }[] };

/** What completion needs to know of a command. */
export interface CompletableCommand {
  name: string;
  summary: string;
  flags: readonly FlagSpec[];
  args?: readonly ArgKind[];
  hidden?: boolean;
}

/** Where the candidates come from: fixed ones, or names the shell must fetch from the cluster / kubeconfig. */
export interface CompletionPlan {
  candidates: string[];
  fetch?: 'daemonsets' | 'namespaces' | 'contexts';
  /** The word typed so far: fetched names are filtered by it. */
  prefix: string;
  directive: number;
  /** The flags already on the line (for -n/--context/--kubeconfig when fetching). */
  flags: Record<string, string | boolean>;
}

/** Every flag any command has (to find the command name behind flags that take values). */
function allFlags(commands: readonly CompletableCommand[]): FlagSpec[] {
  const seen = new Map<string, FlagSpec>();
  for (const f of [...GLOBAL_FLAGS, ...commands.flatMap((c) => c.flags)]) if (!seen.has(f.name)) seen.set(f.name, f);
  return [...seen.values()];
}

const withHelp = (word: string, help: string) => (help ? `${word}\t${help}` : word);

/**
 * The completion of `args` (the words before the cursor, after the program name) plus `toComplete` (the word at the
 * cursor), cobra-style.
 */
export function planCompletion(
  commands: readonly CompletableCommand[],
  args: readonly string[],
  toComplete: string,
): CompletionPlan {
  const flagsAll = allFlags(commands);
  const pre = parseArgvLenient(args, flagsAll);
  const command = commands.find((c) => c.name === pre.positionals[0]);
  const specs = command ? [...GLOBAL_FLAGS, ...command.flags] : [...GLOBAL_FLAGS];
  const parsed = parseArgvLenient(args, specs);
  const plan = (p: Omit<CompletionPlan, 'flags' | 'prefix'> & { prefix?: string }): CompletionPlan => ({
    prefix: toComplete,
    flags: parsed.flags,
    ...p,
  });

  // The word at the cursor is the value of the flag before it (`-n <TAB>`).
  const pending = parsed.pendingFlag;
  if (pending) {
    if (pending.name === 'namespace')
      return plan({ candidates: [], fetch: 'namespaces', directive: Directive.NoFileComp });
    if (pending.name === 'context') return plan({ candidates: [], fetch: 'contexts', directive: Directive.NoFileComp });
    if (pending.name === 'kubeconfig') return plan({ candidates: [], directive: Directive.Default });
    const values = (pending.values ?? []).filter((v) => v.startsWith(toComplete));
    return plan({ candidates: values, directive: Directive.NoFileComp });
  }
  // --flag=<TAB>
  const eq = /^(--[^=]+)=(.*)$/.exec(toComplete);
  if (eq) {
    const spec = specs.find((f) => `--${f.name}` === eq[1]);
    const values = (spec?.values ?? []).filter((v) => v.startsWith(eq[2] as string)).map((v) => `${eq[1]}=${v}`);
    return plan({ candidates: values, directive: Directive.NoFileComp | Directive.NoSpace });
  }
  if (toComplete.startsWith('-')) {
    const names = specs
      .flatMap((f) =>
        [
          `--${f.name}`,
          ...(f.short && toComplete.length <= 2 && !toComplete.startsWith('--') ? [`-${f.short}`] : []),
        ].map((w) => withHelp(w, f.help)),
      )
      .filter((w) => w.startsWith(toComplete));
    return plan({ candidates: names, directive: Directive.NoFileComp });
  }
  if (!command) {
    if (pre.positionals.length > 0) return plan({ candidates: [], directive: Directive.NoFileComp });
    const names = commands
      .filter((c) => !c.hidden && c.name.startsWith(toComplete))
      .map((c) => withHelp(c.name, c.summary));
    return plan({ candidates: names, directive: Directive.NoFileComp });
  }
  const position = parsed.positionals.length - 1;
  const kind = command.args?.[position];
  if (kind === 'daemonset') return plan({ candidates: [], fetch: 'daemonsets', directive: Directive.NoFileComp });
  if (kind) {
    const words = kind.words.filter((w) => w.word.startsWith(toComplete)).map((w) => withHelp(w.word, w.help));
    return plan({ candidates: words, directive: Directive.NoFileComp });
  }
  return plan({ candidates: [], directive: Directive.NoFileComp });
}

/** The __complete output: candidates, then ":<directive>". */
export function completionOutput(candidates: readonly string[], directive: number): string {
  return [...candidates, `:${directive}`].join('\n') + '\n';
}

/** `kubectl-ads completion bash`. */
export function bashCompletion(program = 'kubectl-ads'): string {
  const fn = `__${program.replace(/[^A-Za-z0-9]/g, '_')}_complete`;
  return `# bash completion for ${program}
# Load it in the current shell:   source <(${program} completion bash)
# or for every shell:             ${program} completion bash > /etc/bash_completion.d/${program}
# (kubectl ads ... completes through kubectl's own completion and the kubectl_complete-ads executable.)
${fn}() {
    local cur words cword
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref -n "=:" cur words cword
    else
        cur="\${COMP_WORDS[COMP_CWORD]}"
        words=("\${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    local out directive
    out=$("\${words[0]}" __complete "\${words[@]:1:$((cword - 1))}" "$cur" 2>/dev/null)
    directive=\${out##*:}
    out=\${out%:*}
    [[ $directive =~ ^[0-9]+$ ]] || directive=0
    if (( (directive & 1) != 0 )); then
        return
    fi
    local IFS=$'\\n'
    local values=()
    local line
    for line in $out; do
        values+=("\${line%%$'\\t'*}")
    done
    COMPREPLY=($(compgen -W "\${values[*]}" -- "$cur"))
    if (( (directive & 2) != 0 )); then
        compopt -o nospace 2>/dev/null
    fi
    if (( \${#COMPREPLY[@]} == 0 && (directive & 4) == 0 )); then
        compopt -o default 2>/dev/null
    fi
}
complete -F ${fn} ${program}
`;
}

/** `kubectl-ads completion zsh`. */
export function zshCompletion(program = 'kubectl-ads'): string {
  const fn = `_${program.replace(/[^A-Za-z0-9]/g, '_')}`;
  return `#compdef ${program}
# zsh completion for ${program}
# Load it in the current shell:   source <(${program} completion zsh)
# or for every shell:             ${program} completion zsh > "\${fpath[1]}/_${program}"
${fn}() {
    local out directive line value desc
    local -a lines completions
    out=$("\${words[1]}" __complete "\${(@)words[2,$((CURRENT - 1))]}" "\${words[CURRENT]}" 2>/dev/null)
    lines=("\${(@f)out}")
    directive=\${lines[-1]#:}
    lines=("\${(@)lines[1,-2]}")
    [[ $directive == <-> ]] || directive=0
    (( directive & 1 )) && return 1
    for line in "\${lines[@]}"; do
        [[ -z $line ]] && continue
        value=\${line%%$'\\t'*}
        desc=
        [[ $line == *$'\\t'* ]] && desc=\${line#*$'\\t'}
        completions+=("\${value//:/\\\\:}\${desc:+:$desc}")
    done
    if (( \${#completions} > 0 )); then
        if (( directive & 2 )); then
            _describe -t ${program} '${program}' completions -S ''
        else
            _describe -t ${program} '${program}' completions
        fi
    elif (( (directive & 4) == 0 )); then
        _files
    fi
}
if [[ "\${funcstack[1]}" == "${fn}" ]]; then
    ${fn} "$@"
else
    compdef ${fn} ${program}
fi
`;
}
