using Microsoft.AspNetCore.Http;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>The Kestrel side of the schedule endpoints: plain request delegates over <see cref="ScheduleApi"/>.</summary>
internal sealed class ScheduleEndpoints(ScheduleApi api, AdminMapping mapping)
{
    public Task List(HttpContext context) => AdminEndpoints.Write(context, api.List());

    public Task Get(HttpContext context) => AdminEndpoints.Write(context, api.Get(AdminEndpoints.RouteName(context)));

    /// <summary>Reads the body (up to <see cref="ScheduleApi.MaxBodyBytes"/>), then applies the change.</summary>
    public async Task Patch(HttpContext context)
    {
        var request = await AdminEndpoints.ReadCopiedChange(context, mapping, ScheduleApi.MaxBodyBytes).ConfigureAwait(false);
        await AdminEndpoints.Write(context, api.Change(request)).ConfigureAwait(false);
    }

    /// <summary>Triggers a run now; the body is read (up to <see cref="ScheduleApi.MaxBodyBytes"/>) and not used.</summary>
    public async Task Trigger(HttpContext context)
    {
        var request = await AdminEndpoints.ReadCopiedChange(context, mapping, ScheduleApi.MaxBodyBytes).ConfigureAwait(false);
        await AdminEndpoints.Write(context, api.Trigger(request)).ConfigureAwait(false);
    }
}
