"""Unit 05's exercises: the saved-tensor bill of a generated MLP, reasoned from its spec.

The known-good versions are written the way a learner would after the unit; each buggy one is a
slip the unit warns about, and must be refused with a smallest failing case.
"""


def _element_bytes(spec):
    return spec.dtype.itemsize


def predict_bill(spec):
    size = _element_bytes(spec)
    storages, total = 0, 0
    needs_grad = spec.input_requires_grad  # does the tensor entering this layer need a gradient?
    for position, layer in enumerate(spec.layers):
        trains = not layer.frozen
        relu_recorded = position > 0 and needs_grad
        if trains or relu_recorded:  # one storage, whether one or two nodes saved it
            storages += 1
            total += spec.batch * layer.in_features * size
        if needs_grad:  # the input's gradient needs the weight
            storages += 1
            total += layer.in_features * layer.out_features * size
        needs_grad = needs_grad or trains
    return storages, total


def saved_parameters(spec):
    saved, needs_grad = set(), spec.input_requires_grad
    for layer in spec.layers:
        if needs_grad:
            saved.add(f"{layer.index}.weight")
        needs_grad = needs_grad or not layer.frozen
    return saved


REFERENCE = {
    "05.predict-bill": predict_bill,
    "05.saved-parameters": saved_parameters,
}


# --- plausible bugs: predict_bill -----------------------------------------------------------


def bill_counting_every_save(spec):
    """Sums every save as if it had its own storage: a ReLU output kept by the ReLU and by the next
    Linear is counted twice."""
    size = _element_bytes(spec)
    storages, total = 0, 0
    needs_grad = spec.input_requires_grad
    for position, layer in enumerate(spec.layers):
        trains = not layer.frozen
        activation = spec.batch * layer.in_features * size
        if position > 0 and needs_grad:  # the ReLU's save
            storages += 1
            total += activation
        if trains:  # the Linear's save of the same tensor
            storages += 1
            total += activation
        if needs_grad:
            storages += 1
            total += layer.in_features * layer.out_features * size
        needs_grad = needs_grad or trains
    return storages, total


def bill_first_weight_never_saved(spec):
    """Learned '0.weight is not saved' as a rule, forgetting that it is saved when the input needs a gradient."""
    storages, total = predict_bill(spec)
    if spec.input_requires_grad:
        first = spec.layers[0]
        storages -= 1
        total -= first.in_features * first.out_features * _element_bytes(spec)
    return storages, total


def bill_forgetting_the_last_weight(spec):
    """Stops one layer short when adding weights: the output layer's weight is missed."""
    storages, total = predict_bill(spec)
    needs_grad = spec.input_requires_grad or any(not layer.frozen for layer in spec.layers[:-1])
    if needs_grad:
        last = spec.layers[-1]
        storages -= 1
        total -= last.in_features * last.out_features * _element_bytes(spec)
    return storages, total


def bill_counting_frozen_weights(spec):
    """Counts every weight after the first as saved, frozen prefix or not."""
    size = _element_bytes(spec)
    storages, total = 0, 0
    needs_grad = spec.input_requires_grad
    for position, layer in enumerate(spec.layers):
        trains = not layer.frozen
        if trains or (position > 0 and needs_grad):
            storages += 1
            total += spec.batch * layer.in_features * size
        if position > 0 or spec.input_requires_grad:
            storages += 1
            total += layer.in_features * layer.out_features * size
        needs_grad = needs_grad or trains
    return storages, total


def bill_skipping_frozen_weights(spec):
    """Thinks a frozen layer keeps nothing, though it must keep its weight to pass a gradient back."""
    size = _element_bytes(spec)
    storages, total = 0, 0
    needs_grad = spec.input_requires_grad
    for position, layer in enumerate(spec.layers):
        trains = not layer.frozen
        if trains or (position > 0 and needs_grad):
            storages += 1
            total += spec.batch * layer.in_features * size
        if needs_grad and trains:
            storages += 1
            total += layer.in_features * layer.out_features * size
        needs_grad = needs_grad or trains
    return storages, total


def bill_assuming_four_bytes(spec):
    """Every element taken as a float32, whatever spec.dtype says."""
    storages, total = predict_bill(spec)
    return storages, total // _element_bytes(spec) * 4


# --- plausible bugs: saved_parameters -----------------------------------------------------------


def params_all_but_first(spec):
    return {f"{layer.index}.weight" for layer in spec.layers[1:]}


def params_only_trainable(spec):
    return {
        name
        for name in saved_parameters(spec)
        if not next(l for l in spec.layers if f"{l.index}.weight" == name).frozen
    }


def params_with_biases(spec):
    return saved_parameters(spec) | {name.replace("weight", "bias") for name in saved_parameters(spec)}


def params_without_the_last(spec):
    return saved_parameters(spec) - {f"{spec.layers[-1].index}.weight"}


def params_ignoring_the_input_flag(spec):
    saved, needs_grad = set(), False
    for layer in spec.layers:
        if needs_grad:
            saved.add(f"{layer.index}.weight")
        needs_grad = needs_grad or not layer.frozen
    return saved


BUGGY = {
    "05.predict-bill": [
        bill_counting_every_save,
        bill_first_weight_never_saved,
        bill_forgetting_the_last_weight,
        bill_counting_frozen_weights,
        bill_skipping_frozen_weights,
        bill_assuming_four_bytes,
    ],
    "05.saved-parameters": [
        params_all_but_first,
        params_only_trainable,
        params_with_biases,
        params_without_the_last,
        params_ignoring_the_input_flag,
    ],
}
