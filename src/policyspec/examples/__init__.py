"""Extensions written as a user would write them, against the public front
(``policyspec``) only: the worked example of spec/extending.md, the ``fifo``
profile's refinement, lives here so that nothing below the front imports it."""
