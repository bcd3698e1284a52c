// @vitest-environment jsdom
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { Api } from "../src/api";
import { ApprovalRequest, approvalOf } from "../src/components/ApprovalRequest";
import { ConsoleProvider } from "../src/context";
import type { Me } from "../src/types";

const me = (respond: boolean): Me => ({
  username: "u", groups: [], is_superuser: false, token_expiry: null, token_expiry_iso: null,
  capabilities: { view_console: true, respond, operate_dlq: false, send: false, manage_policies: false },
});

const request = {
  source: "uns-governance",
  metadata: { uns_governance: { decision_id: "d1", action: "deploy.release", resource: "prod/api", risk: "medium",
    agent_id: "bot-1", reason: "ship 1.2", context: { version: "1.2" }, approvals_required: 1 } },
};
const target = { id: "n1", title: "Approval needed: deploy.release", ack_status: "PENDING", request };

describe("ApprovalRequest", () => {
  it("is nothing for a notification that is not an approval", () => {
    const { container } = render(
      <ConsoleProvider api={new Api(vi.fn())} me={me(true)}>
        <ApprovalRequest target={{ ...target, request: { metadata: {} } }} onDone={() => undefined} />
      </ConsoleProvider>,
    );
    expect(container.innerHTML).toBe("");
    expect(approvalOf({ metadata: { uns_governance: { action: 1 } } })).toBeNull();
  });

  it("shows the action and context, without buttons for a reader", () => {
    render(
      <ConsoleProvider api={new Api(vi.fn())} me={me(false)}>
        <ApprovalRequest target={target} onDone={() => undefined} />
      </ConsoleProvider>,
    );
    const card = screen.getByTestId("approval");
    expect(card.textContent).toContain("deploy.release");
    expect(card.textContent).toContain("prod/api");
    expect(card.textContent).toContain('"version": "1.2"');
    expect(screen.queryByRole("button", { name: "Approve" })).toBeNull();
  });

  it("approves with an ACK and denies with a dismiss", async () => {
    const fetchMock = vi.fn(async (_input: RequestInfo | URL, _init?: RequestInit) => new Response(JSON.stringify({ id: "n1", ack_status: "ACKED" }),
      { status: 200, headers: { "Content-Type": "application/json" } }));
    const onDone = vi.fn();
    render(
      <ConsoleProvider api={new Api(fetchMock)} me={me(true)}>
        <ApprovalRequest target={target} onDone={onDone} />
      </ConsoleProvider>,
    );
    await userEvent.click(screen.getByRole("button", { name: "Approve" }));
    await waitFor(() => expect(onDone).toHaveBeenCalledWith(expect.objectContaining({ label: "Approved" })));
    expect(String(fetchMock.mock.calls[0][0])).toContain("/api/v1/notifications/n1/ack");
    await userEvent.click(screen.getByRole("button", { name: "Deny" }));
    await waitFor(() => expect(String(fetchMock.mock.calls[1][0])).toContain("/api/v1/notifications/n1/dismiss"));
  });
});

describe("ApprovalLine", () => {
  it("says what the agent asks to do, and nothing for other rows", async () => {
    const { ApprovalLine } = await import("../src/components/ApprovalRequest");
    const { container, rerender } = render(<ApprovalLine approval={request.metadata.uns_governance} />);
    expect(container.textContent).toContain("deploy.release");
    expect(container.textContent).toContain("prod/api");
    expect(container.textContent).toContain('{"version":"1.2"}');
    rerender(<ApprovalLine approval={null} />);
    expect(container.innerHTML).toBe("");
  });
});
