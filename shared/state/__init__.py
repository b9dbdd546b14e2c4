"""State: the DocStore seam (``docstore``), its SQLite and Firestore implementations, the
factory that picks one (``factory.create_docstore``), and the runtime's repositories on top.

Import implementations from their modules; this package imports nothing so that importing
``shared.state.paths`` stays free (the Firestore SDK is loaded only by the firestore backend).
"""
