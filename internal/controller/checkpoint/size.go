package checkpoint

import "strconv"

// binaryUnits are the suffixes of Kubernetes quantities in powers of 1024, so that a Checkpoint's size
// reads like the workspace size it was captured from (spec.workspace.size, for example 512Mi).
var binaryUnits = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// humanSize writes n bytes for people (status.size, shown by kubectl get): the largest binary unit the size
// reaches, one decimal below 10 of it and whole above, rounded to the nearest (1536 -> 1.5Ki, 52430000 ->
// 50Mi). Exact sizes are in status.sizeBytes.
func humanSize(n int64) string {
	v, u := float64(n), 0
	// A value that would round to 1024 of a unit is written in the next one.
	for v >= 1023.5 && u < len(binaryUnits)-1 {
		v /= 1024
		u++
	}
	digits := 0
	if u > 0 && v < 9.95 {
		digits = 1
	}
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if digits == 1 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + binaryUnits[u]
}
