package sandbox

// outstanding counts the jobs running or waiting for a slot: those that have stored no result yet.
func (j *jobs[K, R]) outstanding() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, jb := range j.byKey {
		if jb.cancel != nil {
			n++
		}
	}
	return n
}
