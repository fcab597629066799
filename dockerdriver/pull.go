package dockerdriver

// RegistryAuth is the credentials for one registry, used by one pull. They are secrets: printing a
// RegistryAuth (fmt, logr) shows only the registry it is for.
type RegistryAuth struct {
	ServerAddress string // the registry, as the credentials name it (e.g. registry.example:5000)
	Username      string
	Password      string
	IdentityToken string // an OAuth refresh token, in place of a password
}

func (a RegistryAuth) String() string   { return "credentials for " + a.ServerAddress + " " + redacted }
func (a RegistryAuth) GoString() string { return a.String() }

// MarshalLog keeps the secrets out of structured logs (logr.Marshaler).
func (a RegistryAuth) MarshalLog() any { return a.String() }

// PullProgress is how far a pull has got, as the daemon reports it. Totals grow as the daemon learns of
// layers, so they are a guide, not a promise.
type PullProgress struct {
	Layers     int   // layers the image has, as far as known
	LayersDone int   // layers downloaded and extracted, or present already
	BytesDone  int64 // bytes downloaded of the layers being fetched
	BytesTotal int64 // their size, as far as known
}

// PullResult is what a finished pull reports.
type PullResult struct {
	// Digest is the manifest digest (sha256:...) the daemon reported for what it pulled; "" when it
	// reported none.
	Digest string
}
