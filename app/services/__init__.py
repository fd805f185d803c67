"""The work the page's callbacks, the app factory and the command line share.

* :mod:`app.services.fit`: plan and run the fits of calibration maps into the store;
* :mod:`app.services.view`: the validated view of a session's settings;
* :mod:`app.services.groups`: the "Per group" section's numbers for the page's settings;
* :mod:`app.services.report`: the small exports and the standalone HTML report.

No Dash here: the callbacks (:mod:`app.callbacks`) validate their inputs, call
these and fill the page; :func:`app.factory.create_app` draws the first page with
them, and the command line's ``report`` (:mod:`app.offline_report`) and the
notebook (:mod:`app.notebook`) run the same code without a browser.
"""
