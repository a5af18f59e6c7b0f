package config

// Validate runs check, the Check method of an options struct built in
// code (no positions, no flags), and returns its problems as Errors, each
// naming its key, or nil. It is the Validate method of such structs:
//
//	func (o *Options) Validate() error { return config.Validate(o.Check) }
func Validate(check func(Scope)) error {
	v := &Validator{}
	check(v.In(nil, ""))
	return v.Err()
}
