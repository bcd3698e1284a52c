import { Component, type ErrorInfo, type ReactNode } from "react";

/** Catches a view that fails while rendering, so one bad value (a hand-edited address, an
 *  unexpected payload) shows a readable message and a way back instead of a blank console; the
 *  navigation stays usable. ``resetKey`` is the route: a new one renders the view again. */
export class ViewBoundary extends Component<
  { resetKey: string; backHref: string; children: ReactNode },
  { error: Error | null; key: string }
> {
  state = { error: null as Error | null, key: this.props.resetKey };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  static getDerivedStateFromProps(props: { resetKey: string }, state: { error: Error | null; key: string }) {
    return props.resetKey === state.key ? null : { error: null, key: props.resetKey };
  }

  componentDidCatch(error: Error, info: ErrorInfo) {
    console.error("the view failed", error, info.componentStack);
  }

  render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    return (
      <div className="problem" role="alert" data-testid="view-failed">
        <strong>This view could not be shown.</strong>
        <span className="problem-detail"> {error.message || String(error)}. Check the address, then </span>
        <button type="button" className="link" onClick={() => this.setState({ error: null })}>try again</button>
        {" or "}<a href={this.props.backHref}>go to the Overview</a>.
      </div>
    );
  }
}
