#!/usr/bin/env python3
"""check_pipefail.py [ROOT] [--self-test] - fails on a pipeline whose reader may stop reading early.

Under `set -o pipefail` a pipeline fails when any of its commands fails. A
reader that exits before its input ends (`grep -q`, `grep -m N`, `grep -l`,
`head`, `sed ...q`, `awk '... exit ...'`, `read`) leaves the writer before it
writing into a closed pipe: the writer dies of SIGPIPE (status 141) whenever
it still had something to write, which depends on how the two were
scheduled. The pipeline then fails now and then on a busy machine and never
when run alone. The check covers every shell script, not only those that set
pipefail themselves: pipefail carries into sourced files and functions, and
a script may set it later. The safe forms read all of their input or take no
pipe at all:

    if grep -q PATTERN <<<"$(command)"; then      # not: command | grep -q PATTERN
    first=$(command | sed -n 1p)                   # not: command | head -1
    first=$(grep -m1 PATTERN FILE)                 # -m on a file, not on a pipe

(`command | grep PATTERN >/dev/null` is no way out: GNU grep stops at the
first match when its output is /dev/null, and the check says so.) The reader
is found past assignments, `!`, `{`, a subshell's `(`, wrappers (env, nice,
stdbuf, timeout) and redirections, in $( ), backquotes, ${...} and $(( )).
Not found: a loop after a pipe that leaves early (`| while read; do break`),
and a reader after `&&` inside a subshell. Case patterns (`grep|head)`) read
as pipes and would be refused. Prints every pipeline found as
`path:line: text (why)` and exits 1 if there is one. --self-test first checks
that a made-up script with each early reader is refused line by line, and
that the safe forms and look-alikes (`||`, quoted text, here-documents,
comments, arithmetic) pass.
"""
import os
import re
import subprocess
import sys

SKIPPED_FOLDERS = {".git", "__pycache__", "node_modules"}
SHEBANG = re.compile(rb"^#!\s*\S*?(/|\s)(env\s+(-\S+\s+)*)?(ba|da|k|z)?sh\b")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SED_QUIT = re.compile(r"(^|[;{}\s0-9$/])[qQ]\s*[0-9]*\s*(;|}|$)")
AWK_EXIT = re.compile(r"\bexit\b")
AWK_END = re.compile(r"\bEND\s*{")


REDIRECTION = re.compile(r"^(\d*|&)(>>?|<|>&|<&|&>>?)(.*)$")
PREFIXES = {"command", "builtin", "exec", "nohup", "{", "!", "time"}
# Wrappers that run the command after their options (and, for timeout, a duration).
WRAPPERS = {"env": 0, "nice": 0, "stdbuf": 0, "timeout": 1, "ionice": 0, "chrt": 1, "taskset": 1}


def split_redirections(words):
    """The words of a command without its redirections, and the redirections' targets."""
    kept, targets, at = [], [], 0
    while at < len(words):
        found = REDIRECTION.match(words[at])
        if found and not words[at].startswith("-"):
            target = found.group(3)
            if not target and at + 1 < len(words):
                at += 1
                target = words[at]
            targets.append((found.group(1) + found.group(2), target))
        else:
            kept.append(words[at])
        at += 1
    return kept, targets


def command_words(words):
    """The command a pipeline element runs: past assignments, `command`, `!`, `{`, and wrappers such as
    env, nice, stdbuf and timeout with their options."""
    while words:
        first = words[0]
        if ASSIGNMENT.match(first) or first in PREFIXES:
            words = words[1:]
        elif first in WRAPPERS:
            words = words[1:]
            while words and (words[0].startswith("-") or ASSIGNMENT.match(words[0])):
                takes_value = first in ("nice", "timeout", "ionice") and words[0] in ("-n", "-s", "-k", "-c")
                words = words[2:] if takes_value else words[1:]
            words = words[WRAPPERS[first]:]
        else:
            break
    return words


def early_reader(words):
    """Why the command `words` (the element after a pipe) may exit before its input ends, or None."""
    words, redirections = split_redirections(words)
    words = command_words(words)
    if not words:
        return None
    name = os.path.basename(words[0])
    arguments = words[1:]
    if name in ("grep", "egrep", "fgrep", "zgrep"):
        for argument in arguments:
            if argument == "--":
                break
            if (argument in ("--quiet", "--silent", "--files-with-matches", "--files-without-match")
                    or argument.startswith("--max-count")):
                return f"'{name} {argument}' stops reading at its first match"
            if argument.startswith("-") and not argument.startswith("--"):
                for flag in argument[1:]:
                    if flag in "qlLm":
                        return f"'{name} -{flag}' stops reading at its first match"
                    if flag in "efABCdD":  # the rest of the word is this flag's value
                        break
        if any(op in (">", "1>", "&>", ">>", "&>>") and target == "/dev/null" for op, target in redirections):
            return f"'{name} ... >/dev/null' stops reading at its first match (GNU grep, writing to /dev/null)"
        return None
    if name == "head":
        return "'head' stops reading after the lines it prints"
    if name in ("sed", "gsed"):
        scripts = []
        for argument in arguments:
            if argument.startswith("--expression="):
                scripts.append(argument[len("--expression="):])
            elif argument.startswith("-e"):
                scripts.append(argument[2:])
            elif not argument.startswith("-"):
                scripts.append(argument)
        if any(SED_QUIT.search(script) for script in scripts):
            return "'sed ...q' stops reading where it quits"
        return None
    if name in ("awk", "gawk", "mawk", "nawk"):
        if any(AWK_EXIT.search(without_end_blocks(a)) for a in arguments if not a.startswith("-")):
            return "'awk ... exit' stops reading where it exits"
        return None
    if name == "read":
        return "'read' takes one line and leaves the rest"
    return None


def without_end_blocks(program):
    """An awk program without its END { } blocks: an exit there comes after all input was read."""
    kept, at = [], 0
    for found in AWK_END.finditer(program):
        if found.start() < at:
            continue
        kept.append(program[at:found.start()])
        depth, at = 1, found.end()
        while at < len(program) and depth:
            depth += {"{": 1, "}": -1}.get(program[at], 0)
            at += 1
    return "".join(kept) + program[at:]


class Lexer:
    """Walks shell text and yields (line, words) for every command that follows a pipe.

    Knows enough of the shell's grammar to tell a pipe from `||`, from text in
    quotes, comments and here-documents, and to find pipelines inside $( ),
    backquotes and double-quoted strings. Case patterns (`a|b)`) read as pipes
    too; a pattern alternative named like a reader would be a false alarm.
    """

    def __init__(self, text):
        self.text = text
        self.at = 0
        self.line = 1
        self.heredocs = []  # delimiters waiting for the end of this line
        self.found = []

    def peek(self, offset=0):
        index = self.at + offset
        return self.text[index] if index < len(self.text) else ""

    def take(self):
        char = self.text[self.at]
        self.at += 1
        if char == "\n":
            self.line += 1
            if self.heredocs:
                self.skip_heredocs()
        return char

    def skip_heredocs(self):
        pending, self.heredocs = self.heredocs, []
        for delimiter, strip_tabs in pending:
            while self.at < len(self.text):
                end = self.text.find("\n", self.at)
                end = len(self.text) if end < 0 else end
                line = self.text[self.at:end]
                self.at = min(end + 1, len(self.text))
                self.line += 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break

    def single_quoted(self):
        out = []
        while self.at < len(self.text) and self.peek() != "'":
            out.append(self.take())
        if self.at < len(self.text):
            self.take()
        return "".join(out)

    def double_quoted(self):
        """Reads to the closing quote; pipelines in $( ) and backquotes inside count."""
        out = []
        while self.at < len(self.text):
            char = self.peek()
            if char == '"':
                self.take()
                break
            if char == "\\":
                self.take()
                if self.at < len(self.text):
                    out.append(self.take())
            elif char == "$" and self.peek(1) == "(" and self.peek(2) != "(":
                self.at += 2
                self.commands(")")
                out.append("$(...)")
            elif char == "`":
                self.take()
                self.commands("`")
                out.append("`...`")
            else:
                out.append(self.take())
        return "".join(out)

    def heredoc_operator(self):
        """After `<<`: reads the delimiter word and queues its body to be skipped."""
        strip_tabs = self.peek() == "-"
        if strip_tabs:
            self.take()
        while self.peek() in (" ", "\t"):
            self.take()
        word = []
        while self.at < len(self.text) and self.peek() not in " \t\n;&|<>()":
            char = self.take()
            if char == "'":
                word.append(self.single_quoted())
            elif char == '"':
                word.append(self.double_quoted())
            elif char != "\\":
                word.append(char)
        self.heredocs.append(("".join(word), strip_tabs))

    def commands(self, closer):
        """Reads commands up to `closer` (')' of $( ), '`', or '' for the end of the text)."""
        words, word, after_pipe, pipe_line, depth = [], None, False, 0, 0

        def end_word():
            nonlocal word
            if word is not None:
                words.append("".join(word))
                word = None

        def end_command():
            nonlocal words, after_pipe
            end_word()
            if after_pipe and words:
                why = early_reader(words)
                if why:
                    self.found.append((pipe_line, why))
            words, after_pipe = [], False

        while self.at < len(self.text):
            char = self.peek()
            if closer and char == closer and depth == 0:
                self.take()
                break
            if char == "\\":
                self.take()
                if self.peek() == "\n":
                    self.take()
                    continue
                if self.at < len(self.text):
                    word = (word or []) + [self.take()]
                continue
            if char == "#" and word is None:
                while self.at < len(self.text) and self.peek() != "\n":
                    self.at += 1
                continue
            if char == "'":
                self.take()
                word = (word or []) + [self.single_quoted()]
                continue
            if char == '"':
                self.take()
                word = (word or []) + [self.double_quoted()]
                continue
            if char == "$" and self.peek(1) == "(" and self.peek(2) == "(":
                self.at += 3
                self.arithmetic()
                word = (word or []) + ["$((...))"]
                continue
            if char == "$" and self.peek(1) == "(":
                self.at += 2
                self.commands(")")
                word = (word or []) + ["$(...)"]
                continue
            if char == "`":
                self.take()
                self.commands("`")
                word = (word or []) + ["`...`"]
                continue
            if char == "<" and self.peek(1) == "<" and self.peek(2) == "<":  # a here-string
                self.at += 3
                word = (word or []) + ["<<<"]
                continue
            if char == "<" and self.peek(1) == "<":
                end_word()
                self.at += 2
                self.heredoc_operator()
                words.append("<<heredoc")
                continue
            if char == "|":
                self.take()
                if self.peek() == "|":  # ||: a list, not a pipe
                    self.take()
                    end_command()
                    continue
                if self.peek() == "&":
                    self.take()
                end_command()
                after_pipe, pipe_line = True, self.line
                continue
            if char == "&" and (self.peek(1) == ">" or (word and word[-1] in "<>")):
                self.take()  # a redirection (2>&1, &>file), not a list
                word = (word or []) + [char]
                continue
            if char == "$" and self.peek(1) == "{":
                self.at += 2
                self.parameter()
                word = (word or []) + ["${...}"]
                continue
            if char in ";&\n":
                self.take()
                if char == "\n" and after_pipe and not words and word is None:
                    continue  # a pipe at a line's end goes on with the next line
                end_command()
                continue
            if char == "(" and self.peek(1) == "(" and word is None and not words:
                self.at += 2  # an arithmetic command, (( ... ))
                self.arithmetic()
                words.append("((...))")
                continue
            if char in "()":
                self.take()
                end_word()
                if char == "(":
                    depth += 1
                    if after_pipe and not words:
                        continue  # a subshell reading the pipe: its first command is the reader
                else:
                    depth = max(depth - 1, 0)
                end_command()
                continue
            if char in " \t":
                self.take()
                end_word()
                continue
            self.take()
            word = (word or []) + [char]
        end_command()

    def substitution(self, char):
        """After `char` was taken inside an expansion: lexes a $( ) or backquoted command there; True if so."""
        if char == "$" and self.peek() == "(" and self.peek(1) != "(":
            self.take()
            self.commands(")")
            return True
        if char == "`":
            self.commands("`")
            return True
        return False

    def parameter(self):
        """Skips a ${...} expansion, whose operators (${x//a|b/c}, ${#x}) are no pipes or comments, but
        lexes the commands substituted in it (${x:-$(cmd | head -1)})."""
        depth = 1
        while self.at < len(self.text) and depth > 0:
            char = self.take()
            if char == "\\":
                if self.at < len(self.text):
                    self.take()
            elif char == "'":
                self.single_quoted()
            elif char == '"':
                self.double_quoted()
            elif not self.substitution(char):
                depth += {"{": 1, "}": -1}.get(char, 0)

    def arithmetic(self):
        """Skips the rest of $(( )) or (( )) (their | and << are operators), lexing substituted commands."""
        depth = 2
        while self.at < len(self.text) and depth > 0:
            char = self.take()
            if not self.substitution(char):
                depth += {"(": 1, ")": -1}.get(char, 0)


def early_readers(text):
    lexer = Lexer(text)
    lexer.commands("")
    return sorted(lexer.found)


def is_shell_script(path):
    if path.endswith((".sh", ".bash")):
        return True
    try:
        with open(path, "rb") as handle:
            return bool(SHEBANG.match(handle.readline(200)))
    except OSError:
        return False


def is_build_output(folder):
    """A build tree or a virtual environment: files the repository made or installed, not its own."""
    return any(os.path.exists(os.path.join(folder, marker)) for marker in ("CMakeCache.txt", "pyvenv.cfg"))


def repository_files(root, use_git=True):
    """The repository's files: git's tracked and unignored ones where root is in git, else every file
    below root but in build trees and virtual environments (with a note on standard error)."""
    if use_git:
        try:
            listed = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                                     "--exclude-standard"], capture_output=True, check=True).stdout
            return sorted(os.path.join(root, os.fsdecode(name)) for name in listed.split(b"\0") if name)
        except (OSError, subprocess.CalledProcessError) as error:
            why = error.stderr.decode(errors="replace").strip() if getattr(error, "stderr", None) else str(error)
            print(f"check_pipefail.py: not using git ({why.splitlines()[0] if why else 'no output'}); "
                  f"reading every file below {root}", file=sys.stderr)
    found = []
    for directory, folders, names in os.walk(root):
        folders[:] = sorted(f for f in folders
                            if f not in SKIPPED_FOLDERS and not is_build_output(os.path.join(directory, f)))
        found.extend(os.path.join(directory, name) for name in sorted(names))
    return found


def check(root, use_git=True):
    problems, scripts = [], 0
    for path in repository_files(root, use_git):
        if not os.path.isfile(path) or not is_shell_script(path):
            continue
        scripts += 1
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        lines = text.split("\n")
        for number, why in early_readers(text):
            problems.append(f"{os.path.relpath(path, root)}:{number}: {lines[number - 1].strip()} ({why})")
    return problems, scripts


def self_test():
    import tempfile
    refused = {
        "grep -q": "ctest -N | grep -q torch.ddp",
        "grep -qE in an if": "if ctest -N | grep -qE 'torch'; then :; fi",
        "grep -Fq": "x=$(printf 'a\\nb\\n' | grep -Fq a)",
        "grep -m1": 'first=$(grep pattern "$log" | grep -m1 "Ending")',
        "grep -m 1": "cat x | grep -m 1 y",
        "grep --quiet": "cat x | grep --quiet y",
        "grep -l": "cat x | grep -l y",
        "head": "compgen -G '*.whl' | head -1",
        "head in a string": 'echo "kept: $(basename "$(compgen -G "$d/*.whl" | head -1)")"',
        "head in backquotes": "v=`ls | head -n 1`",
        "head mid-pipeline": "sort -u list | head -8 | tr '\\n' ' '",
        "head after a line break": "sort -u list |\n  head -8",
        "head after env": "sort list | LC_ALL=C head -2",
        "sed q": "cat x | sed 1q",
        "sed braces": "cat x | sed -n '/a/{p;q}'",
        "awk exit": "cat x | awk 'NR==1 {print; exit}'",
        "awk exit in BEGIN": "ls | awk 'BEGIN { exit 1 }'",
        "awk exit after END": "ls | awk 'END { n = 1 } /x/ { exit }'",
        "read": "printf 'a\\n' | read -r line",
        "|&": "make 2>&1 |& head",
        "in a function": "f() {\n  ls | grep -q x\n}",
        "in braces": "ls | { read -r first; }",
        "in a subshell": "ls | ( grep -q x )",
        "in an unquoted default": "v=${V:-$(ls | head -1)}",
        "in arithmetic": "n=$(( $(ls | head -1) + 1 ))",
        "after env": "ls | env LC_ALL=C grep -q x",
        "after timeout": "ls | timeout 5 grep -q x",
        "after stdbuf": "ls | stdbuf -oL head -1",
        "after a redirection first": "ls | 2>/dev/null grep -q x",
        "grep to /dev/null": "ls | grep x >/dev/null",
        "grep to /dev/null, both streams": "ls | grep x &> /dev/null",
        "grep -L": "ls | grep -L x",
        "sed --expression": "ls | sed --expression=1q",
        "after a redirection": "make 2>&1 | grep -q error",
    }
    passed = {
        "or-list": "true || grep -q x file",
        "here-string": 'if grep -q x <<<"$(ctest -N)"; then :; fi',
        "sed 1p": "compgen -G '*.whl' | sed -n 1p",
        "grep -c": "ls | grep -c x",
        "grep -e with q": "ls | grep -e q -e m",
        "grep -m on a file": "grep -m1 x file | tr a b",
        "head on a file": "head -1 file",
        "sed substitution": "ls | sed 's/q/x/'",
        "awk without exit": "ls | awk '{print $1}'",
        "awk exit in END": "ls | awk '$1 == 3 { found = 1 } END { if (x) { y = 1 } exit !found }'",
        "quoted": "echo 'a | head -1'; echo \"b | grep -q c\"",
        "comment": "ls  # | head -1",
        "here-document": "cat <<EOF\nls | head -1\nEOF\nls | tr a b",
        "indented here-document": "cat <<-'END'\n\tls | grep -q x\n\tEND\nls",
        "arithmetic": "x=$(( 1 | 2 )); ls | sort",
        "while read": "ls | while read -r f; do :; done",
        "here-string with a pipe after": 'tr a b <<<"$x" | sort',
        "parameter expansion": 'echo "${x//a|b/c}" ${#y} | sort',
        "redirection": "ls 2>&1 | sort &> /dev/null",
        "arithmetic command": "(( x << 2 ))\nls | sort",
        "grep to a file": "ls | grep x > out.txt",
        "sort after timeout": "ls | timeout 5 sort",
        "grep of a pipe to /dev/null on its stderr": "ls | grep x 2>/dev/null",
    }
    files = {f"refused/{i}.sh": text for i, text in enumerate(refused.values())}
    files.update({f"passed/{i}.sh": text for i, text in enumerate(passed.values())})
    files["refused/no_ending"] = "#!/usr/bin/env bash\nset -o pipefail\nls | head -1\n"
    files["passed/not_shell.py"] = "#!/usr/bin/env python3\nprint('ls | head -1')\n"
    names = list(refused) + ["a script named by its shebang"]
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w") as handle:
                handle.write(text + "\n")
        problems, _ = check(root, use_git=False)  # a temporary folder may lie in an ignored one of a git tree
    wrong = []
    for index, name in enumerate(names):
        path = f"refused/{index}.sh" if index < len(refused) else "refused/no_ending"
        if sum(p.startswith(path + ":") for p in problems) != 1:
            wrong.append(f"{name} ({path}) was not refused exactly once")
    wrong += [f"a safe form was refused: {p}" for p in problems if p.startswith("passed/")]
    if wrong:
        print("FAIL: the self-test:\n  " + "\n  ".join(wrong) + "\nwhat it found:\n  " + "\n  ".join(problems))
        return False
    print(f"self-test: {len(names)} planted early readers refused, {len(passed) + 1} safe forms passed")
    return True


def main():
    arguments = [a for a in sys.argv[1:] if a != "--self-test"]
    if "--self-test" in sys.argv[1:] and not self_test():
        return 1
    root = os.path.abspath(arguments[0] if arguments else os.path.join(os.path.dirname(__file__), "..", ".."))
    problems, scripts = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"FAIL: {len(problems)} pipeline(s) end in a reader that may stop early; under pipefail the "
              "writer's SIGPIPE fails them now and then (the forms to use: tests/scripts/check_pipefail.py)")
        return 1
    print(f"pipefail: no pipeline in {scripts} shell scripts ends in a reader that stops before its input ends")
    return 0


if __name__ == "__main__":
    sys.exit(main())
