package topology

import dd "github.com/dockside-dev/dockside/dockerdriver"

// Alive tells whether a container runs, is frozen or is being restarted: it holds its processes.
func Alive(c dd.ContainerInfo) bool {
	return c.State == dd.StateRunning || c.State == dd.StatePaused || c.State == dd.StateRestarting
}

// Ended tells whether a container started once and holds no processes now.
func Ended(c dd.ContainerInfo) bool { return c.Exists && !c.StartedAt.IsZero() && !Alive(c) }
