"""``devicewatch attach``: a job devicewatch did not start, watched from outside.

``target`` reads what ``/proc`` says of the process (its command line, folder, owner) and lists
the Python processes to pick from; ``stacks`` turns austin's samples into stack slices;
``classify`` says which kind of phase a stack is in; ``phases`` turns the slices of the training
loop's thread into the run's phase and epoch events, the same vocabulary the zero-code
instrumentation speaks; ``sampler`` runs austin, which never stops the process, and reads its
samples as they come; ``loop_variable`` reads the script's epoch once, with py-spy; ``remote``
puts the zero-code hooks into a Python 3.14 process instead, by ``sys.remote_exec`` of the
script ``inside``, and takes them out at the detach; ``recorder`` is the recorder with an
attached process in place of a launched one.
"""
