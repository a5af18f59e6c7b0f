package tablebuild

import "github.com/lutkit/lutkit/tables/tablesyaml"

// The declarative list of tables, read by package tablesyaml (which links
// no compiler of sources, so that its parser is fuzzed in a small
// binary): these names keep the API of this package.
type (
	// Config is a parsed and validated tables.yaml.
	Config = tablesyaml.Config
	// TableConfig declares one table.
	TableConfig = tablesyaml.TableConfig
	// SourceConfig is one source of a table.
	SourceConfig = tablesyaml.SourceConfig
	// ConfigError is one problem found in a tables.yaml.
	ConfigError = tablesyaml.ConfigError
	// ConfigErrors is every problem found in a tables.yaml.
	ConfigErrors = tablesyaml.ConfigErrors
)

// LoadConfig reads and validates the tables.yaml at path.
func LoadConfig(path string) (*Config, error) { return tablesyaml.LoadConfig(path) }

// ParseConfig parses and validates data as the tables.yaml at path.
func ParseConfig(path string, data []byte) (*Config, error) {
	return tablesyaml.ParseConfig(path, data)
}
