package retry

// Class is a classifier's verdict on one failure.
type Class int

const (
	// Permanent failures end the loop at once. It is the zero value, so a classifier
	// that says nothing fails closed.
	Permanent Class = iota
	// Transient failures may succeed on another attempt.
	Transient
)

func (c Class) String() string {
	if c == Transient {
		return "transient"
	}
	return "permanent"
}

// Classifier decides whether a failure is worth another attempt.
type Classifier interface {
	Classify(err error) Class
}

// ClassifierFunc adapts a function to [Classifier].
type ClassifierFunc func(err error) Class

// Classify calls f.
func (f ClassifierFunc) Classify(err error) Class { return f(err) }
