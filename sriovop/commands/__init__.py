"""One module per `sriovop` subcommand; each exposes a click object named `command`."""
