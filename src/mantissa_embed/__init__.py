"""mantissa-embed: CPU-native metric learning."""
