# am: the HPAM all-to-all D-way request-reply protocol and the C API.
