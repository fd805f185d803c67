"""calibration-dashboard: the Dash web app and the command line (app.cli)."""
