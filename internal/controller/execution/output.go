package execution

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// outputBudget bounds the JSON size of the output an Execution keeps, both streams together. etcd refuses
// objects past 1.5 MiB, and JSON spells some bytes (control characters, '<', '>', '&') in six, so two
// streams at the largest cap could pass it although each is within its byte cap.
const outputBudget = 768 << 10

// keptOutput turns what the driver kept of each stream into status text with the count of bytes cut,
// within outputBudget once encoded.
func keptOutput(res dd.ExecResult) (stdout string, stdoutCut int64, stderr string, stderrCut int64) {
	stdout, stdoutCut = headText(res.Stdout, res.StdoutCut)
	stderr, stderrCut = headText(res.Stderr, res.StderrCut)
	for jsonSize(stdout)+jsonSize(stderr) > outputBudget {
		if jsonSize(stdout) >= jsonSize(stderr) {
			stdout, stdoutCut = halve(stdout, stdoutCut)
		} else {
			stderr, stderrCut = halve(stderr, stderrCut)
		}
	}
	return stdout, stdoutCut, stderr, stderrCut
}

// headText makes the first bytes of a stream a string the API accepts: a character cut in half at the end
// is dropped (and counted as cut), and bytes that are not UTF-8 are replaced.
func headText(b []byte, cut int64) (string, int64) {
	if cut > 0 {
		for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
			if start := len(b) - i; utf8.RuneStart(b[start]) {
				if !utf8.FullRune(b[start:]) {
					b, cut = b[:start], cut+int64(i)
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), cut
}

// halve keeps the first half of s (at a character boundary) and counts the rest as cut.
func halve(s string, cut int64) (string, int64) {
	n := len(s) / 2
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], cut + int64(len(s)-n)
}

func jsonSize(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}
