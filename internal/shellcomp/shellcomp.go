// Package shellcomp writes er's shell completion scripts for bash and zsh.
package shellcomp

import (
	"fmt"
	"strings"
)

// Words are what completes: er's subcommands, er collect's options, er print's commands.
type Words struct {
	Subcommands    []string
	CollectOptions []string
	PrintCommands  []string // without the leading '-'
}

// Bash returns a bash completion script for er (and its classic names collect and er_print): the
// subcommand first, then options and commands, and experiment directories (*.er) for the rest.
func Bash(w Words) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# bash completion for er: source it, or install it as share/bash-completion/completions/er
_er_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]} sub=""
	local cmd=${COMP_WORDS[0]##*/}
	case $cmd in
	collect) sub=collect ;;
	er_print) sub=print ;;
	*) if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "%s" -- "$cur"))
		return
	fi
	sub=${COMP_WORDS[1]} ;;
	esac
	case $sub in
	collect)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "%s" -- "$cur"))
		else
			COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
		fi ;;
	print)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "%s" -- "$cur"))
		else
			COMPREPLY=($(compgen -d -X '!*.er' -- "$cur") $(compgen -f -X '!*.erg' -- "$cur"))
		fi ;;
	*)
		COMPREPLY=($(compgen -d -- "$cur")) ;;
	esac
}
complete -F _er_complete er collect er_print
`, strings.Join(w.Subcommands, " "), strings.Join(w.CollectOptions, " "), strings.Join(prefixed(w.PrintCommands), " "))
	return b.String()
}

// Zsh returns a zsh completion script for er (install it as share/zsh/site-functions/_er).
func Zsh(w Words) string {
	var b strings.Builder
	fmt.Fprintf(&b, `#compdef er collect er_print
# zsh completion for er: install it as share/zsh/site-functions/_er
local -a subcommands collect_options print_commands
subcommands=(%s)
collect_options=(%s)
print_commands=(%s)
local sub
case $service in
collect) sub=collect ;;
er_print) sub=print ;;
*)
	if (( CURRENT == 2 )); then
		_describe 'er command' subcommands
		return
	fi
	sub=$words[2] ;;
esac
case $sub in
collect)
	if [[ $PREFIX == -* ]]; then
		compadd -a collect_options
	else
		_command_names -e; _files
	fi ;;
print)
	if [[ $PREFIX == -* ]]; then
		compadd -a print_commands
	else
		_files -g '*.er(/) *.erg'
	fi ;;
*) _files ;;
esac
`, strings.Join(w.Subcommands, " "), strings.Join(w.CollectOptions, " "), strings.Join(prefixed(w.PrintCommands), " "))
	return b.String()
}

func prefixed(cmds []string) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = "-" + c
	}
	return out
}
