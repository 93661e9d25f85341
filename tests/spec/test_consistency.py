"""The training section against the groups: loss and output activations, task name, options, sizes."""

from __future__ import annotations

from conftest import located


def test_training_section_is_checked_against_the_network(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
          - {name: y, kind: output, size: 1, activation: identity}
        connections:
          - {from: x, to: y}
        training:
          learning_rate: 0.1
          loss: cross_entropy
          task: {name: adding_problem}
        """)
    rows = located(error)
    assert ("training.loss", 9, "cross_entropy needs softmax or logistic outputs; 'y' is identity") in rows
    ((path, line, message),) = [row for row in rows if row[0] == "training.task"]
    assert line == 10 and "unknown task 'adding_problem'" in message and "did you mean 'adding'?" in message


#: A net of the adding task's sizes, its training section to follow.
ADDING_NET = """
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y}
"""


def test_a_misspelt_task_option_in_a_spec_gets_the_closest_option(spec_error):
    error = spec_error(ADDING_NET + "        training: {learning_rate: 0.1, task: {name: adding, lenght: 30}}\n")
    ((path, line, message),) = located(error)
    assert (path, line) == ("training.task.lenght", 7)  # (at the option itself)
    assert message == "task 'adding' has no option 'lenght'; its options: length; did you mean 'length'?"


def test_a_task_option_s_bad_value_is_located_at_the_option(spec_error):
    """It was located at training.task, the section: in a long task mapping, the line of the option
    tells which value to fix."""
    error = spec_error(ADDING_NET + """        training:
          learning_rate: 0.1
          task:
            name: adding
            length: 10
""")
    ((path, line, message),) = located(error)
    assert (path, line) == ("training.task.length", 11)
    assert message.startswith("task 'adding': length (the minimal sequence length T) must be an integer >= 20")
    huge = ADDING_NET + "        training: {learning_rate: 0.1, task: {name: adding, length: 100000000000000000000}}\n"
    ((path, _, message),) = located(spec_error(huge))
    assert path == "training.task.length" and "is beyond" in message  # (the integers' own limit)


def test_task_sizes_must_fit_the_network(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 3}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y}
        training: {learning_rate: 0.1, task: {name: adding}}
        """)
    ((path, _, message),) = located(error)
    assert path == "training.task" and message == "task 'adding' has 2 inputs and 1 outputs, the network 3 and 1"
